from __future__ import annotations

import uuid
from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field, computed_field

from docchat.documents.models import Document, DocumentStatus, DocumentVersion, Visibility
from docchat.kit.pagination import Page
from docchat.kit.schemas import RequestModel


class DocumentFromUrl(RequestModel):
    url: str = Field(
        min_length=1,
        max_length=2000,
        description="An http(s) address of a web page or a file (PDF, Word, ...)",
    )
    category_id: uuid.UUID | None = None


class VersionRead(BaseModel):
    """A new file for a document that has not taken over (yet)."""

    model_config = ConfigDict(from_attributes=True)

    number: int = Field(description="The version it becomes once it completes")
    filename: str
    status: DocumentStatus = Field(
        description="queued or processing: the current version answers meanwhile; failed: "
        "it never took over (see error)"
    )
    error: str | None
    chunk_count: int | None
    chunks_done: int
    created_at: datetime


class DocumentRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: uuid.UUID
    owner_id: uuid.UUID | None = Field(
        description="Your id when the document is yours; null for documents others shared"
    )
    category_id: uuid.UUID | None
    visibility: Visibility
    filename: str
    content_type: str
    size_bytes: int
    sha256: str
    status: DocumentStatus
    error: str | None
    page_count: int | None
    chunk_count: int | None
    pages_done: int
    chunks_done: int
    queue_position: int | None = Field(
        None,
        description=(
            "While queued: its place in the queue as it stands (1: next); workers take turns "
            "between owners, one document each"
        ),
    )
    version: int = Field(description="1 for the first upload, +1 for each new version")
    versioned_at: datetime | None = Field(
        description="When the current version took over (null: the first upload)"
    )
    new_version: VersionRead | None = Field(
        None, description="A new version being read, or the last one that failed"
    )
    document_date: date | None = Field(
        None,
        description=(
            "The document's own date: what its file says (a PDF's or Office file's "
            "modification date, else its creation date; an EPUB's publication date; an HTML "
            "page's date meta tags), else the day its synced source or web server last "
            "changed it; null when neither says (set once the file is read)"
        ),
    )
    created_at: datetime
    updated_at: datetime
    duplicate: bool = Field(
        False,
        description=(
            "Upload replies only: you had uploaded these exact bytes already, so this is that "
            "document (status 200) and nothing new was stored or queued"
        ),
    )

    @classmethod
    def for_viewer(
        cls,
        document: Document,
        viewer_id: uuid.UUID,
        queue_position: int | None = None,
        new_version: DocumentVersion | None = None,
    ) -> DocumentRead:
        """The document as `viewer_id` may see it: other people's ids stay out."""
        read = cls.model_validate(document)
        if read.owner_id != viewer_id:
            read.owner_id = None
        if read.status == DocumentStatus.queued:
            read.queue_position = queue_position
        if new_version is not None:
            read.new_version = VersionRead.model_validate(new_version)
        return read

    @computed_field  # type: ignore[prop-decorator]
    @property
    def progress(self) -> float:
        """0..1 while processing: extraction counts for a tenth, embedding for the rest."""
        if self.status == DocumentStatus.queued:
            return 0.0
        if self.status != DocumentStatus.processing:
            return 1.0
        extracted = 0.1 if self.page_count else 0.0
        if not self.chunk_count:
            return extracted
        return round(extracted + 0.9 * min(self.chunks_done / self.chunk_count, 1.0), 3)


class PassageRead(BaseModel):
    """A chunk of a document's text, as searches find and answers cite it."""

    model_config = ConfigDict(from_attributes=True)

    chunk_index: int = Field(description="Its place in the document (the `n` of a chunk id)")
    page: int | None
    location: str | None
    text: str


class PassagePage(Page[PassageRead]):
    """A page of a document's passages, and how their text is written."""

    markdown: bool = Field(
        description="The text is Markdown (headings, tables and lists as the document's reader "
        "wrote them: Word, HTML, Markdown, spreadsheet files and the like): render it; false "
        "for plain text (PDFs, text files, scans)"
    )


class FileFormatRead(BaseModel):
    """A kind of file docchat reads: what to offer in a file picker, and what its page count
    counts."""

    kind: str = Field(description="Its MIME type, as documents' content_type gives it")
    label: str = Field(description='What people call it: "Word file", "PDF"')
    suffixes: list[str] = Field(description='File name endings, like ".docx"')
    parts: list[str] | None = Field(
        description='What page_count counts, singular and plural ("slide", "slides"); null: '
        "the kind has no parts worth counting"
    )

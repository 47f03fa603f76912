"""Text inside the pictures of Word, PowerPoint and OpenDocument files, read by OCR.

A chart's labels, a scanned table pasted into a report, a photo of a whiteboard on a slide: the
file's own text never holds them. Each picture the document shows (in the order it shows them,
each file once) is read by the OCR that reads scans (`ocr.recognize`), under the same bounds:
at most `OcrOptions.max_pages` pictures a document, each within `max_megapixels` and its time
(`page_seconds`), all within `MAX_SECONDS_PER_DOCUMENT`; one too small to hold text (an icon,
a rule) is not read. A picture that is too large, unreadable or over the bounds is skipped
with a warning: the document's own text is still read. Its text becomes a part located
"Slide 3, image 1, text by OCR" or "Image 2, text by OCR", as an image upload's is marked.

The pictures are found through the package's own references (OOXML relationships, ODF's
`xlink:href`), never by listing its media folder: an unused file in it is not the document's.
"""

from __future__ import annotations

import logging
import posixpath
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from xml.etree import ElementTree

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring as safe_xml
from PIL import Image, UnidentifiedImageError

from docchat.extraction.kinds import FileKind
from docchat.extraction.ocr import MIN_IMAGE_SIDE, OcrOptions, recognize
from docchat.extraction.reader import PageText

logger = logging.getLogger(__name__)

OCR_NOTE = "text by OCR"
# A picture file larger than this is not a figure worth reading (a photo of a page is 1-5 MB).
MAX_PICTURE_BYTES = 30 * 1024 * 1024
# XML parts larger than this are not read for their pictures (the reader refuses such files).
MAX_PART_BYTES = 64 * 1024 * 1024
# OCR of a document's pictures stops after this many seconds (the rest are left unread), well
# inside the reader's time for the whole file (WORKER_EXTRACT_TIMEOUT_SECONDS, 300).
MAX_SECONDS_PER_DOCUMENT = 120.0


class PictureBudget:
    """How many pictures of a document OCR may still read, and for how long."""

    def __init__(self, options: OcrOptions, seconds: float = MAX_SECONDS_PER_DOCUMENT) -> None:
        self._left = options.max_pages
        self._until = time.monotonic() + seconds
        self._name = ""

    def take(self, document: str) -> bool:
        """Whether one more picture may be read (a warning, once, when not)."""
        if self._left > 0 and time.monotonic() < self._until:
            self._left -= 1
            return True
        if not self._name:
            self._name = document
            logger.warning("%s: OCR read as many pictures as it may; the rest are left", document)
        return False


_RELATIONSHIPS = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_EMBED = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
_BLIP = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
_SLIDE_ID = "{http://schemas.openxmlformats.org/presentationml/2006/main}sldId"
_RELATION_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_ODF_IMAGE = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}image"
_XLINK_HREF = "{http://www.w3.org/1999/xlink}href"


@dataclass(frozen=True)
class Picture:
    member: str  # its file in the package
    place: str | None  # "Slide 3" on a slide; None in a document without parts


def _xml(archive: zipfile.ZipFile, name: str) -> ElementTree.Element | None:
    try:
        if archive.getinfo(name).file_size > MAX_PART_BYTES:
            return None
        root: ElementTree.Element = safe_xml(archive.read(name))
        return root
    except (KeyError, ElementTree.ParseError, DefusedXmlException):
        return None


def _relations(archive: zipfile.ZipFile, part: str) -> dict[str, str]:
    """A part's relationships inside the package: id -> the member it points at."""
    folder, name = posixpath.split(part)
    root = _xml(archive, posixpath.join(folder, "_rels", f"{name}.rels"))
    if root is None:
        return {}
    found = {}
    for relation in root.iter(_RELATIONSHIPS):
        target = relation.get("Target", "")
        if relation.get("TargetMode") == "External" or not target:
            continue
        member = posixpath.normpath(posixpath.join(folder, target)).lstrip("/")
        found[relation.get("Id", "")] = member
    return found


def _shown(archive: zipfile.ZipFile, part: str) -> list[str]:
    """The pictures an OOXML part shows, in order."""
    root = _xml(archive, part)
    if root is None:
        return []
    relations = _relations(archive, part)
    ids = (blip.get(_EMBED, "") for blip in root.iter(_BLIP))
    return [relations[id_] for id_ in ids if id_ in relations]


def _docx(archive: zipfile.ZipFile) -> Iterator[Picture]:
    for member in _shown(archive, "word/document.xml"):
        yield Picture(member, None)


def _pptx(archive: zipfile.ZipFile) -> Iterator[Picture]:
    presentation = "ppt/presentation.xml"
    root = _xml(archive, presentation)
    if root is None:
        return
    slides = _relations(archive, presentation)
    ids = (slide.get(_RELATION_ID, "") for slide in root.iter(_SLIDE_ID))
    for number, id_ in enumerate(ids, start=1):
        if id_ in slides:
            for member in _shown(archive, slides[id_]):
                yield Picture(member, f"Slide {number}")


def _odf(archive: zipfile.ZipFile) -> Iterator[Picture]:
    root = _xml(archive, "content.xml")
    if root is None:
        return
    for image in root.iter(_ODF_IMAGE):
        href = image.get(_XLINK_HREF, "")
        if href and "://" not in href:
            yield Picture(posixpath.normpath(href).lstrip("/"), None)


PICTURES: dict[FileKind, Callable[[zipfile.ZipFile], Iterator[Picture]]] = {
    FileKind.docx: _docx,
    FileKind.pptx: _pptx,
    FileKind.odt: _odf,
}


def _decoded(archive: zipfile.ZipFile, member: str, options: OcrOptions) -> Image.Image | None:
    """The picture, decoded when it is an image of a size worth reading; None otherwise."""
    try:
        info = archive.getinfo(member)
    except KeyError:
        return None
    if info.file_size > MAX_PICTURE_BYTES:
        logger.warning("picture %s is %d bytes; not read by OCR", member, info.file_size)
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(BytesIO(archive.read(member)))
        if min(image.size) < MIN_IMAGE_SIDE:
            return None
        megapixels = image.width * image.height / 1_000_000
        if megapixels > options.max_megapixels:
            logger.warning("picture %s is %.0f megapixels; not read by OCR", member, megapixels)
            return None
        image.load()
        return image
    except Image.DecompressionBombError:
        logger.warning("picture %s is far too large; not read by OCR", member)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        # Not a picture Pillow reads (a vector EMF or WMF, a damaged file): nothing to read.
        logger.info("picture %s not read: %s", member, exc)
    return None


def picture_parts(path: Path, kind: FileKind, options: OcrOptions) -> list[PageText]:
    """The text OCR reads in the pictures the document shows, a part per picture with text."""
    finder = PICTURES.get(kind)
    if finder is None:
        return []
    parts: list[PageText] = []
    with zipfile.ZipFile(path) as archive:
        seen: set[str] = set()
        counts: dict[str | None, int] = {}
        budget = PictureBudget(options)
        for picture in finder(archive):
            if picture.member in seen:
                continue  # a logo on every slide is read once
            seen.add(picture.member)
            number = counts[picture.place] = counts.get(picture.place, 0) + 1
            image = _decoded(archive, picture.member, options)
            if image is None:
                continue
            if not budget.take(path.name):
                break
            with image:
                text = recognize(image, options)
            if text.strip():
                where = f"{picture.place}, image {number}" if picture.place else f"Image {number}"
                parts.append(PageText(page=None, text=text, location=f"{where}, {OCR_NOTE}"))
    return parts

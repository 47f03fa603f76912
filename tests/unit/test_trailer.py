"""The model's verdict line: read off the answer, never shown, never taking the answer with it."""

from __future__ import annotations

import pytest

from docchat.answers.trailer import Trailer, TrailerFilter, split


@pytest.mark.parametrize(
    ("answer", "body", "trailer"),
    [
        ("Nine [1].\nEvidence: answered", "Nine [1].", Trailer("answered")),
        ("Nine [1]. **Evidence:** partial.", "Nine [1].", Trailer("partial")),
        ("No idea.\n\nEvidence: none", "No idea.", Trailer("none")),
        ("No idea.\nEVIDENCE - not in the documents", "No idea.", Trailer("none")),
        (
            "A [1], B [2].\nConflict: [1] vs [2]\nEvidence: answered",
            "A [1], B [2].",
            Trailer("answered", (1, 2)),
        ),
        ("A [1].\nEvidence: answered\nConflict: none", "A [1].", Trailer("answered")),
    ],
)
def test_a_trailer_is_read_and_taken_out(answer: str, body: str, trailer: Trailer) -> None:
    said = split(answer)
    assert (said.body, said.trailer) == (body, trailer)


@pytest.mark.parametrize(
    "answer",
    [
        "The evidence shows that the office opens at nine [1].",
        "Evidence: the report [1] gives 1,200 staff.",  # a sentence, not a verdict
        "Conflict: the two reports [1][2] give different figures.",
        "Evidence: maybe",
        "",
    ],
)
def test_what_is_not_a_trailer_stays_in_the_answer(answer: str) -> None:
    said = split(answer)
    assert said.body == answer and said.trailer == Trailer()


def _streamed(pieces: list[str]) -> tuple[list[str], str]:
    verdict_line = TrailerFilter()
    shown = [verdict_line.feed(piece) for piece in pieces]
    return shown, "".join(shown) + verdict_line.flush()


def test_a_trailer_never_reaches_the_reader_as_the_answer_streams() -> None:
    _, text = _streamed(["The office ", "opens at nine [1].", "\nEvi", "dence: ans", "wered"])
    assert text == "The office opens at nine [1]."
    _, text = _streamed(["Nine [1].", " **Evidence", ":** partial."])
    assert text == "Nine [1]."


def test_a_sentence_about_evidence_streams_without_waiting_for_the_end() -> None:
    shown, text = _streamed(["The ", "evidence", " shows nine", ". Evidence is", " clear."])
    assert text == "The evidence shows nine. Evidence is clear."
    assert shown[1] == "evidence" and shown[-1] == " clear."


def test_what_was_held_and_is_no_trailer_comes_back_at_the_end() -> None:
    _, text = _streamed(["Nine [1].", "\nEvidence"])
    assert text == "Nine [1].\nEvidence"

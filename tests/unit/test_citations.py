from __future__ import annotations

import uuid

import pytest

from docchat.retrieval.citations import (
    MarkerFilter,
    apply_citations,
    has_markers,
    infer_citations,
    is_bare,
    may_be_bare,
    says_information_is_missing,
    strip_markers,
)
from docchat.retrieval.schemas import Source

DOC_A, DOC_B = uuid.uuid4(), uuid.uuid4()


def source(document_id: uuid.UUID, page: int | None, index: int) -> Source:
    return Source(
        document_id=document_id,
        document_name=f"{document_id}.pdf",
        chunk_id=f"{document_id}_{index}",
        page=page,
        similarity=0.8,
        content_preview="preview",
    )


CANDIDATES = [source(DOC_A, 1, 0), source(DOC_A, 2, 3), source(DOC_A, 1, 1), source(DOC_B, None, 0)]


def test_keeps_only_cited_sources_in_order_of_first_citation() -> None:
    cited = apply_citations("Bridges rust [2]. Paint helps [4].", CANDIDATES)
    assert cited.content == "Bridges rust [1]. Paint helps [2]."
    assert [s.chunk_id for s in cited.sources] == [CANDIDATES[1].chunk_id, CANDIDATES[3].chunk_id]


def test_same_document_and_page_become_one_source() -> None:
    cited = apply_citations("One [1], same page [3], again [1].", CANDIDATES)
    assert cited.content == "One [1], same page [1], again [1]."
    assert len(cited.sources) == 1


def test_grouped_and_repeated_markers() -> None:
    cited = apply_citations("Both [1, 2] agree [1][3].", CANDIDATES)
    assert cited.content == "Both [1][2] agree [1]."
    assert len(cited.sources) == 2


def test_markers_beyond_the_context_are_dropped() -> None:
    cited = apply_citations("Made up [7] and real [2].", CANDIDATES)
    assert cited.content == "Made up and real [1]."
    assert [s.page for s in cited.sources] == [2]


def test_no_citation_means_no_source() -> None:
    cited = apply_citations("Nothing cited here.", CANDIDATES)
    assert cited.content == "Nothing cited here." and cited.sources == []


@pytest.mark.parametrize(
    "answer",
    [
        "The documents do not contain information about dragons [1].",
        "I couldn’t find that in the context.",
        "There is no relevant information in the passages.",
        "Die Dokumente enthalten keine Informationen über Drachen.",
        "Les documents ne contiennent aucune information sur les dragons.",
        "No encontré información sobre dragones en los documentos.",
        "I documenti non contengono informazioni sui draghi.",
        "Os documentos não contêm informações sobre dragões.",
        "De documenten bevatten geen informatie over draken.",
        "В документах нет информации о драконах.",
        "文档中没有提到龙。",
        "資料にはドラゴンについての情報がありません。",
    ],
)
def test_insufficient_information_is_detected(answer: str) -> None:
    assert says_information_is_missing(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "The bridge opened in 1932 [1].",
        "Die Brücke wurde 1932 eröffnet [1].",
        "Le pont a été ouvert en 1932 et ne contient pas de péage [1].",
        "El puente se abrió en 1932 [1].",
        "这座桥于1932年开通，不包含收费站[1]。",
    ],
)
def test_ordinary_answers_are_not_flagged(answer: str) -> None:
    assert not says_information_is_missing(answer)


def test_strip_markers() -> None:
    assert strip_markers("No data [1] about that [2, 3].") == "No data about that."


PASSAGES = [
    "The Northwind lighthouse was built in 1887 on Gull Rock. Its lamp was converted to "
    "electricity in 1952.",
    "Finances: membership fees rose to 40 euros per year.",
]


def test_citations_are_inferred_for_sentences_that_restate_a_passage() -> None:
    answer = "The lighthouse was built in 1887 on Gull Rock. Membership fees are 40 euros per year."
    marked = infer_citations(answer, PASSAGES, "When was the Northwind lighthouse built?")
    assert marked == (
        "The lighthouse was built in 1887 on Gull Rock [1]. "
        "Membership fees are 40 euros per year [2]."
    )


def test_nothing_is_inferred_for_unrelated_or_echoing_answers() -> None:
    question = "When was the Northwind lighthouse built?"
    assert infer_citations("Paris is the capital of France.", PASSAGES, question) == (
        "Paris is the capital of France."
    )
    # Repeating the question's own words is no evidence of using a passage.
    assert "[" not in infer_citations("The Northwind lighthouse was built.", PASSAGES, question)


def test_a_sentence_answering_with_a_figure_of_a_passage_cites_it() -> None:
    """A real model (Qwen2.5-1.5B) answered "The bigint type takes 8 bytes of storage.":
    its only word the question did not hold was the figure, and it stayed uncited."""
    question = "When was the Northwind lighthouse built?"
    assert infer_citations("The Northwind lighthouse was built in 1887.", PASSAGES, question) == (
        "The Northwind lighthouse was built in 1887 [1]."
    )
    # A figure no passage gives, or one without the question's words, cites nothing.
    assert "[" not in infer_citations(
        "The Northwind lighthouse was built in 1890.", PASSAGES, question
    )
    assert "[" not in infer_citations("It was 1887.", PASSAGES, question)
    # Every figure: the year asked about too, when the passage does not give it.
    asked_1890 = "Was the Northwind lighthouse built in 1890?"
    assert "[" not in infer_citations(
        "The Northwind lighthouse was built in 1890, in 1887.", PASSAGES, asked_1890
    )


def test_a_short_answer_cites_the_passage_that_gives_it_with_its_unit() -> None:
    """Qwen2.5-1.5B: "... is `nextval`." (its only new word a name the passage gives) stayed
    uncited; "The value of the money type takes 16 bytes." was cited to a passage about
    "a 16-bit integer count"."""
    passages = [
        "Each tuple begins with a 16-bit integer count of the number of fields. The value "
        "bytes follow.",
        "The function nextval advances a sequence object to its next value and returns that value.",
    ]
    money = "How many bytes does a value of the money type take?"
    answer = "The value of the money type takes 16 bytes."
    assert "[" not in infer_citations(answer, passages, money)
    assert infer_citations(answer, [passages[0].replace("16-bit", "16 bytes")], money).endswith(
        "[1]."
    )
    table = "| Name | Storage Size |\n| --- | --- |\n| bigint | 8 bytes |"
    bigint = "How many bytes of storage does a bigint take?"
    assert infer_citations("The bigint type takes 8 bytes of storage.", [table], bigint) == (
        "The bigint type takes 8 bytes of storage [1]."
    )
    sequence = "Which function advances a sequence and returns the new value?"
    assert infer_citations(
        "The function that advances a sequence and returns the new value is `nextval`.",
        passages,
        sequence,
    ).endswith("`nextval` [2].")


def test_has_markers_ignores_numbers_outside_the_context() -> None:
    assert has_markers("See [2].", 2) and not has_markers("See [3].", 2)
    assert not has_markers("No citation.", 2)


MARKED = [
    "Paris is the capital [1]. It is large [2, 3].",
    "Use `items[1]` and [2] here [4][4]",
    "```python\nvalues[0] = 1  # [1]\n```\nDone [1].",
    "A bracket [not a marker] and [12",
    "Trailing spaces before markers   [7]",
]


@pytest.mark.parametrize("answer", MARKED)
def test_streamed_markers_are_removed_wherever_the_pieces_break(answer: str) -> None:
    expected = strip_markers(answer)
    for first in range(len(answer) + 1):
        for second in range(first, len(answer) + 1, 3):
            markers = MarkerFilter()
            pieces = [answer[:first], answer[first:second], answer[second:]]
            shown = "".join(markers.feed(piece) for piece in pieces) + markers.flush()
            assert shown.strip() == expected, (first, second)


def test_markers_in_code_are_code() -> None:
    assert strip_markers("See `rows[2]` [1].") == "See `rows[2]`."
    assert strip_markers("```\nx[1]\n```\nok [2]") == "```\nx[1]\n```\nok"
    cited = apply_citations("Index with `a[2]` as in [2].", CANDIDATES)
    assert cited.content == "Index with `a[2]` as in [1]."
    assert [s.chunk_id for s in cited.sources] == [CANDIDATES[1].chunk_id]
    assert not has_markers("only `code[1]` here", len(CANDIDATES))


@pytest.mark.parametrize("answer", ["[1]", " [2]. ", "[1][2]", "[1, 2]\n", "", "([1])"])
def test_an_answer_of_markers_alone_is_bare(answer: str) -> None:
    assert is_bare(answer)


@pytest.mark.parametrize("answer", ["Yes [1].", "14 hours [1]", "`items[1]`", "[1] Paris"])
def test_an_answer_with_words_is_not_bare(answer: str) -> None:
    assert not is_bare(answer)


def test_a_streamed_answer_may_be_bare_until_its_first_word() -> None:
    assert may_be_bare("[") and may_be_bare("[1") and may_be_bare("[1] [2")
    assert not may_be_bare("[1] The")

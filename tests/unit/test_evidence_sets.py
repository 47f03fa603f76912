"""The evidence evaluation sets (bench/datasets/evidence-*) parse, every question has what
`bench/eval_evidence.py` needs, and the bench's own judging of answers does what it says."""

from __future__ import annotations

import io
import json

import pypdf
from bench import evidence_sets as sets

SQUAD = sets.DATASETS / "squad-dev"
MANUAL = sets.DATASETS / "postgresql-manual"


def _articles() -> dict[str, str]:
    with (SQUAD / "documents.jsonl").open(encoding="utf-8") as lines:
        return {str(row["title"]): str(row["text"]) for row in map(json.loads, lines)}


def _pages() -> set[str]:
    with (MANUAL / "corpus.jsonl").open(encoding="utf-8") as lines:
        return {str(json.loads(line)["_id"]) for line in lines}


def _near_is_known(collection: str, near: str, articles: dict[str, str], pages: set[str]) -> bool:
    return near in articles if collection == "squad-dev" else near in pages


def test_unanswerable_questions_say_what_kind_and_why() -> None:
    questions = sets.unanswerable()
    articles, pages = _articles(), _pages()
    assert 55 <= len(questions) <= 70
    assert len({question.id for question in questions}) == len(questions)
    for question in questions:
        assert question.collection in sets.COLLECTIONS
        assert question.kind in sets.KINDS
        assert question.text.endswith("?") and question.why
        assert _near_is_known(question.collection, question.near, articles, pages), question.id
    assert {question.kind for question in questions} == set(sets.KINDS)


def test_answerable_controls_hold_their_answers() -> None:
    controls = sets.answerable()
    articles, pages = _articles(), _pages()
    assert 55 <= len(controls) <= 70
    assert len({control.id for control in controls}) == len(controls)
    for control in controls:
        assert control.answers and control.text.endswith("?")
        assert _near_is_known(control.collection, control.near, articles, pages), control.id
        if control.collection == "squad-dev":
            assert any(answer in articles[control.near] for answer in control.answers)


def test_conflicting_pairs_give_two_dated_values() -> None:
    pairs = sets.conflicts()
    assert 35 <= len(pairs) <= 45
    assert len({pair.id for pair in pairs}) == len(pairs)
    names = [document.filename for pair in pairs for document in pair.documents]
    assert len(set(names)) == len(names)
    for pair in pairs:
        first, second = pair.documents
        assert first.date != second.date, pair.id
        for document, other in ((first, second), (second, first)):
            assert sets.holds(document.text, document.value), (pair.id, document.value)
            assert not sets.holds_any(document.text, other.variants), (pair.id, other.value)
            assert document.format in ("pdf", "html")


def test_each_document_renders_with_its_date_in_the_file_and_the_text() -> None:
    for pair in sets.conflicts():
        for document in pair.documents:
            data, content_type = sets.render(document)
            if document.format == "pdf":
                assert content_type == "application/pdf"
                reader = pypdf.PdfReader(io.BytesIO(data))
                created = str(reader.metadata["/CreationDate"])
                assert created.startswith("D:" + document.date.replace("-", ""))
                text = reader.pages[0].extract_text()
            else:
                assert content_type == "text/html"
                text = data.decode()
                assert f'<meta name="date" content="{document.date}">' in text
            assert "Published " in text and sets.holds(text, document.value), pair.id


def test_values_are_held_whole() -> None:
    assert sets.holds("The default is 1000.", "1000")
    assert not sets.holds("The default is 1000.", "100")
    assert not sets.holds("about 12.8 million", "12 million")
    assert sets.holds("between 100-150 species", "100–150")
    assert sets.holds("a population of 520159", "520,159")
    assert sets.holds("It is REPLICA.", "replica")


def test_claims_are_the_text_before_each_marker_group() -> None:
    answer = "Fresno had 520,159 people [1], but a revision says 522,053 [2]. Both agree [1][2]."
    assert sets.claims(answer) == [
        sets.Claim("Fresno had 520,159 people", (1,)),
        sets.Claim("but a revision says 522,053", (2,)),
        sets.Claim("Both agree", (1, 2)),
    ]
    quoted = "From the documents:\n\n> One sentence. It was born in 1745. [1]\n\n> Another. [2]"
    assert sets.claims(quoted) == [
        sets.Claim("One sentence. It was born in 1745", (1,)),
        sets.Claim("Another", (2,)),
    ]


def test_a_claim_is_supported_when_its_cited_passage_holds_its_fact() -> None:
    facts = [("520,159",), ("522,053",)]
    passages = {1: "As of 2015 the population was 520,159.", 2: "It is now put at 522,053."}
    assert sets.supported(sets.Claim("It had 520,159", (1,)), facts, passages) is True
    assert sets.supported(sets.Claim("It had 520,159", (2,)), facts, passages) is False
    assert sets.supported(sets.Claim("520,159 or 522,053", (1, 2)), facts, passages) is True
    assert sets.supported(sets.Claim("520,159 or 522,053", (1,)), facts, passages) is False
    assert sets.supported(sets.Claim("Fresno is a city", (1,)), facts, passages) is None


def test_bare_answers() -> None:
    assert sets.is_bare("[1]") and sets.is_bare(" [2]. ")
    assert not sets.is_bare("1998 [1]") and not sets.is_bare("")

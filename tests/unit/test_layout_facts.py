"""The layout bench's facts (bench/datasets/layout) parse, number at least 60, and each answer
is printed on the page the fact names."""

from __future__ import annotations

from collections import Counter

import pypdf
from bench import eval_layout


def test_every_fact_s_answer_is_on_its_page() -> None:
    facts = eval_layout.read_facts()
    assert len(facts) >= 60
    assert set(Counter(fact.where for fact in facts)) == {"table", "column"}
    pages: dict[str, list[str]] = {}
    for fact in facts:
        if fact.file not in pages:
            reader = pypdf.PdfReader(fact.path)
            pages[fact.file] = [" ".join(page.extract_text().split()) for page in reader.pages]
        assert fact.question.endswith("?")
        assert any(answer in pages[fact.file][fact.page - 1] for answer in fact.answers), fact

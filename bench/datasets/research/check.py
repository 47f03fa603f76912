"""Check research/questions.jsonl against the documents it is written over.

    python bench/datasets/research/check.py

Each question needs facts from several passages; each fact is an answer string that must occur
in its document's text exactly once, so that finding the string means the right passage was
read. The text is taken as docchat's bench reads it: for a manual page (`../postgresql-manual`,
by corpus `_id`) the HTML with tags replaced by spaces, entities unescaped and whitespace
collapsed to single spaces; for a SQuAD article (`../squad-dev/documents.jsonl`, by `_id`) its
`text` with whitespace collapsed. Comparison is case-sensitive.

Checked: ids are unique; `collection` and `kind` are known; every question has 2 to 4 required
entries, each naming a document of its collection, with an answer of 3 to 10 words (tokens
holding a letter or digit) that occurs exactly once in that document and is not repeated within
the question; two facts from the same document are at least MIN_GAP characters apart; a
"multi-document" question names at least two documents; there are at least MIN_QUESTIONS
questions and MIN_MULTI_DOCUMENT multi-document ones. Prints one summary line (and one line per
problem) and exits 1 if anything failed.
"""

from __future__ import annotations

import collections
import html
import itertools
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATASETS = HERE.parent
QUESTIONS = HERE / "questions.jsonl"
KINDS = ("compare", "list", "multi-part", "multi-document")
MIN_QUESTIONS = 60
MIN_MULTI_DOCUMENT = 25
MIN_REQUIRED, MAX_REQUIRED = 2, 4
MIN_WORDS, MAX_WORDS = 3, 10
# Facts of one question taken from the same document sit at least this far apart.
MIN_GAP = 1500

_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w")


def normalise(text: str) -> str:
    """Collapse every run of whitespace to one space."""
    return _SPACE.sub(" ", text)


def html_text(markup: str) -> str:
    """A page's text: tags become spaces, entities are unescaped, whitespace collapsed."""
    return normalise(html.unescape(_TAG.sub(" ", markup)))


def load_manual() -> dict[str, str]:
    """The PostgreSQL manual pages, by corpus `_id`."""
    root = DATASETS / "postgresql-manual"
    pages: dict[str, str] = {}
    with (root / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            if line.strip():
                row = json.loads(line)
                pages[row["_id"]] = html_text((root / row["file"]).read_text(encoding="utf-8"))
    return pages


def load_squad() -> dict[str, str]:
    """The SQuAD dev articles, by `_id`."""
    articles: dict[str, str] = {}
    path = DATASETS / "squad-dev" / "documents.jsonl"
    with path.open(encoding="utf-8") as documents:
        for line in documents:
            if line.strip():
                row = json.loads(line)
                articles[row["_id"]] = normalise(row["text"])
    return articles


def word_count(answer: str) -> int:
    """Whitespace-separated tokens that hold a letter or digit (not a lone bracket or comma)."""
    return sum(1 for token in answer.split() if _WORD.search(token))


def check_question(
    question: dict[str, object], collections_: dict[str, dict[str, str]]
) -> tuple[list[str], int]:
    """Problems with one question, and how many of its answers occur in another document too."""
    qid = question.get("_id")
    problems: list[str] = []
    shared = 0
    docs = collections_.get(str(question.get("collection")))
    if docs is None:
        return [f"{qid}: unknown collection {question.get('collection')!r}"], 0
    if question.get("kind") not in KINDS:
        problems.append(f"{qid}: unknown kind {question.get('kind')!r}")
    text = question.get("text")
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{qid}: empty text")
    required = question.get("required")
    if not isinstance(required, list) or not MIN_REQUIRED <= len(required) <= MAX_REQUIRED:
        count = len(required) if isinstance(required, list) else 0
        return [*problems, f"{qid}: {count} required entries"], 0
    positions: dict[str, list[int]] = collections.defaultdict(list)
    answers: list[str] = []
    for entry in required:
        document, answer = str(entry.get("document")), str(entry.get("answer"))
        answers.append(answer)
        page = docs.get(document)
        if page is None:
            problems.append(f"{qid}: unknown document {document!r}")
            continue
        if not MIN_WORDS <= word_count(answer) <= MAX_WORDS:
            problems.append(f"{qid}: {word_count(answer)} words in {answer!r}")
        found = [match.start() for match in re.finditer(re.escape(answer), page)]
        if len(found) != 1:
            problems.append(f"{qid}: {answer!r} occurs {len(found)} times in {document}")
        else:
            positions[document].append(found[0])
        if any(answer in other for name, other in docs.items() if name != document):
            shared += 1
    if len(set(answers)) != len(answers):
        problems.append(f"{qid}: the same answer is required twice")
    for document, starts in positions.items():
        starts.sort()
        for first, second in itertools.pairwise(starts):
            if second - first < MIN_GAP:
                problems.append(f"{qid}: two facts {second - first} characters apart in {document}")
    names = {str(entry.get("document")) for entry in required}
    if question.get("kind") == "multi-document" and len(names) < 2:
        problems.append(f"{qid}: multi-document question uses one document")
    return problems, shared


def main() -> int:
    collections_ = {"postgresql-manual": load_manual(), "squad-dev": load_squad()}
    with QUESTIONS.open(encoding="utf-8") as lines:
        questions = [json.loads(line) for line in lines if line.strip()]
    problems: list[str] = []
    ids = collections.Counter(str(question.get("_id")) for question in questions)
    problems += [f"{qid}: id used {count} times" for qid, count in ids.items() if count > 1]
    shared = 0
    for question in questions:
        found, also_elsewhere = check_question(question, collections_)
        problems += found
        shared += also_elsewhere
    kinds = collections.Counter(str(question.get("kind")) for question in questions)
    by_collection = collections.Counter(str(question.get("collection")) for question in questions)
    if len(questions) < MIN_QUESTIONS:
        problems.append(f"only {len(questions)} questions (at least {MIN_QUESTIONS})")
    if kinds["multi-document"] < MIN_MULTI_DOCUMENT:
        problems.append(
            f"only {kinds['multi-document']} multi-document questions "
            f"(at least {MIN_MULTI_DOCUMENT})"
        )
    for problem in problems:
        print(problem)
    facts = sum(len(question.get("required") or []) for question in questions)
    print(
        f"{'FAIL' if problems else 'OK'}: {len(questions)} questions "
        f"({', '.join(f'{name} {count}' for name, count in sorted(by_collection.items()))}; "
        f"{', '.join(f'{kind} {kinds[kind]}' for kind in KINDS)}), {facts} required facts, "
        f"{shared} also found in another document, {len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

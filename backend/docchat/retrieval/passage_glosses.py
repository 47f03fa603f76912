"""Chinese passages read in English too: their dictionary gloss, for BM25 and for an embedder
that reads English only.

An English question shares nothing with a Chinese passage but its numbers: BM25 reads the
passage as pairs of characters, and the bundled embedding model (all-MiniLM-L6-v2) was trained
on English and maps Chinese text to vectors that say little of its meaning. The question is
glossed into Chinese for the search (`answers/search_queries.py`), but a gloss of a question is
a few words in a language the embedder cannot read. So the passage is also written the other
way, once, when it is indexed: CC-CEDICT's English for each of its words (`word_by_word`,
"维苏威火山在1781年爆发了" -> "... volcano exist 1781 year break out erupt explode"). BM25 reads
the gloss as English beside the passage's own pairs, and an embedder that reads English only
embeds the gloss instead of the Chinese, which it cannot read. Measured on XQuAD's Chinese
(docs/retrieval-quality.md), the English questions' recall@4 went from 0.60 to 0.89.

German, French and Spanish passages are not glossed: the embedder reads their names and many
of their words, and the question's gloss into them already brings recall within 0.11 of
English; a document-side gloss would add every sense of every word to passages it does not
need.
"""

from __future__ import annotations

from dataclasses import dataclass

from docchat.retrieval.word_by_word import CHINESE, MOST_PASSAGE_WORDS, Glossary

# The languages whose passages are also indexed as their English gloss.
GLOSSED = frozenset({CHINESE})
# PostgreSQL's text search configuration the gloss is read with.
GLOSS_CONFIGURATION = "english"
# How long indexing waits for the dictionaries when the service has just started and compiles
# them (about a minute); after that a passage is indexed without its gloss.
READY_WAIT_SECONDS = 180.0


@dataclass(frozen=True)
class PassageGlosses:
    """English glosses of passages in `GLOSSED` languages, from the installed dictionaries."""

    glossary: Glossary
    ready_wait_seconds: float = READY_WAIT_SECONDS

    def of(self, text: str, language: str | None) -> str | None:
        """The passage's English gloss, or None when its language is not glossed or there is
        no dictionary for it. Blocks while the dictionaries are compiled: call it off the
        event loop."""
        if language not in GLOSSED:
            return None
        if not self.glossary.wait_ready(self.ready_wait_seconds):
            return None
        return self.glossary.gloss(text, language, most_words=MOST_PASSAGE_WORDS)

"""How common words are in a language, from `wordfreq` (its counts of each language's web,
subtitle, news and book text; code Apache-2.0, data CC BY-SA 4.0).

The glossary ranks a word's translations by it (`word_by_word`) and German compounds are split
by it (`compounds`). wordfreq keeps every list it has read for the life of the process (a
language's is some hundred thousand words): this module hands out a plain dict of the words
asked for and clears wordfreq's own caches, so only what a caller keeps stays in memory.
"""

from __future__ import annotations


def frequencies(language: str, rarest: float = 0.0) -> dict[str, float]:
    """Each word of `language` (ISO 639-1, lower case as wordfreq writes them) and its share
    of the language's words, those at least `rarest`; empty for a language wordfreq does not
    know."""
    import wordfreq

    if language not in wordfreq.available_languages():
        return {}
    try:
        return {
            word: share
            for word, share in wordfreq.get_frequency_dict(language).items()
            if share >= rarest
        }
    finally:
        wordfreq.get_frequency_dict.cache_clear()
        wordfreq.get_frequency_list.cache_clear()

"""What the passages of an answer support: the engine's own verdict, in both answer modes.

A question asks for something (`Needs`): a kind of thing (a date, a number, a name:
`highlight.asked_kind`), about the things it names ("Glimmerdal", "X200": `extractive.names_in`),
often at a given time or figure ("in 2019"), sometimes as of now ("who currently leads").
Passages found by similarity can be about the right topic and still not answer: the wrong year,
a different named thing, a figure they never give, a past holder of a post. The verdict is:

- `not_in_documents` when no passage the answer rests on mentions a figure the question gives
  (the wrong year), or the subject of a do-question ("How many bytes does a tinyint take?"), or
  holds anything of the asked kind of date or number at all;
- `partial` when they hold it, but not in the sentences the answer quotes, or name only some of
  what the question names, or the quoted sentences name none of it (Warsaw's population quoted
  for Kraków's), or the question asks about now and the quoted sentences do not say it is still
  so (for a model's answer, its passages), or it asks how many of something and they do not
  name what is counted, or no quote about the question's names holds any of its other words
  (what it asks about: "born"), or a model's answer states a figure its passages do not give;
- `answered` otherwise.

It is a check of what the passages say, in words and figures, not of what they mean: it catches
the plain misses cheaply and offline, and a connected model's own verdict (`answers.trailer`)
comes on top of it. A passage in another language than the question's is read with its English
gloss too (`Gloss`): an English question's words are looked for in a German passage's English.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date

from docchat.answers.meta import Evidence
from docchat.retrieval.citations import SPACED_MARKER, strip_markers
from docchat.retrieval.context import ContextEntry
from docchat.retrieval.highlight import AskedKind, asked_kind, holds_asked_kind, terms
from docchat.retrieval.languages import language_of

# Words that ask about the present: the passages must not speak only of the past.
_ASKS_NOW = re.compile(
    r"\b(?:currently|current|now|today|presently|at present|these days|still|latest|newest|"
    r"most recent|as of (?:today|now))\b",
    re.IGNORECASE,
)
# What a passage must say for "who currently ..." to be answered as of now, not as of its day.
_SPEAKS_OF_NOW = re.compile(
    r"\b(?:currently|current|now|today|presently|at present|incumbent|as of|still)\b",
    re.IGNORECASE,
)
# "As of August 2009": a past day, not now.
_AS_OF_YEAR = re.compile(r"as of\b[^.;\n]{0,20}?\b(1\d{3}|20\d{2})\b", re.IGNORECASE)


def _speaks_of_now(quoted: str, this_year: int) -> bool:
    """Whether the quoted sentences say something holds now: "currently", "as of" a recent
    year (not "as of August 2009")."""
    for said in _SPEAKS_OF_NOW.finditer(quoted):
        as_of = _AS_OF_YEAR.match(quoted, said.start())
        if as_of is None or int(as_of.group(1)) >= this_year - 1:
            return True
    return False


# "eight bytes" and "8 bytes" are one value; "four" and "eight" two.
NUMBER_WORDS = {
    **{word: str(value) for value, word in enumerate(("zero", "one", "two", "three", "four"))},
    **{word: str(value) for value, word in enumerate(("five", "six", "seven", "eight"), 5)},
    **{word: str(value) for value, word in enumerate(("nine", "ten", "eleven", "twelve"), 9)},
    "fifteen": "15",
    "twenty": "20",
}
NUMBER_WORD = re.compile(rf"\b(?:{'|'.join(NUMBER_WORDS)})\b", re.IGNORECASE)
# "How long / tall / far ...", "population", "how much faster": a measure, not a bare year.
_ASKS_MEASURE = re.compile(
    r"\bhow (?:long|tall|high|far|old|big|large|deep|wide|heavy|fast|much)\b|\bpopulation\b|"
    r"\bspeed\b",
    re.IGNORECASE,
)
# A length, and nothing else ("How tall was the tower?": 187 feet, not "five years").
_ASKS_LENGTH = re.compile(r"\bhow (?:tall|high|far|deep|wide)\b", re.IGNORECASE)
_LENGTH = re.compile(
    r"^\s*(?:km|kilomet(?:re|er)s?|mi|miles?|m|met(?:re|er)s?|cm|mm|feet|foot|ft|inch(?:es)?|"
    r"yards?)\b",
    re.IGNORECASE,
)
# "Who ...": a person, whose name has two words or more and is not an institution's.
_ASKS_PERSON = re.compile(r"\bwho(?:m|se)?\b", re.IGNORECASE)
_AMOUNT = r"(?:[$€£]\s?)?(?:\d[\d,.]*|" + "|".join(NUMBER_WORDS) + "|a few|several)"
# A price in words ("40 euros") or by its code ("EUR 30", "80 CHF").
_CURRENCY_CODE = r"(?:eur|usd|gbp|chf|jpy|cny|sek|nok|dkk)"
_CURRENCY = (
    rf"(?:euros?|dollars?|cents?|pence|francs?|yen|yuan|rupees?|kronor|kroner|{_CURRENCY_CODE})"
)
_UNIT = (
    r"(?:%|percent\b|per cent\b|times\b|(?:k|m|g|t)?b\b|bytes?\b|"
    r"(?:kilo|mega|giga|tera)bytes?\b|km\b|kilomet(?:re|er)s?\b|mi\b|miles?\b|m\b|"
    r"met(?:re|er)s?\b|cm\b|mm\b|feet\b|foot\b|ft\b|inch(?:es)?\b|yards?\b|hours?\b|"
    r"h\b|minutes?\b|min\b|seconds?\b|s\b|ms\b|days?\b|weeks?\b|months?\b|years?\b|"
    r"centur(?:y|ies)\b|kg\b|kilograms?\b|pounds?\b|lbs?\b|tons?\b|tonnes?\b|mph\b|"
    r"km/h\b|knots?\b|people\b|inhabitants\b|residents\b|hundred\b|thousand\b|million\b|"
    rf"billion\b|{_CURRENCY}\b)"
)
_MEASURE = re.compile(
    rf"(?:[$€£¥]|\b{_CURRENCY_CODE}\s?)\s?\d|\b{_AMOUNT}\s*{_UNIT}|\b\d{{1,3}}(?:,\d{{3}})+\b",
    re.IGNORECASE,
)
# In a gloss each word stands as all its translations, so a unit comes a few words after its
# amount ("zwei Stunden": "twain two a brace of classes lessons periods hours").
GLOSS_UNIT_WITHIN_WORDS = 8
_GLOSSED_MEASURE = re.compile(
    rf"\b{_AMOUNT}(?:\s+\S+){{0,{GLOSS_UNIT_WITHIN_WORDS}}}?\s+{_UNIT}", re.IGNORECASE
)


def gives_length(after_number: str) -> bool:
    """Whether the words after a number make it a length ("187 feet", "57 m")."""
    return _LENGTH.match(after_number) is not None


def gives_measure(text: str, english: str = "") -> bool:
    """Whether `text` gives a measure: a number with its unit ("1,230 km", "four bytes",
    "$40", "3 times"), or a large figure ("520,159"); a year alone is none. `english`: the
    gloss of a text in another language, where a unit follows its amount within a few
    words."""
    return _MEASURE.search(text) is not None or _GLOSSED_MEASURE.search(english) is not None


# A number counts what follows it within this many words ("30 working days"), before a word
# that starts a rate or another thing ("6 euros a day" counts euros).
COUNTED_WITHIN_WORDS = 3
_ENDS_COUNTED = frozenset(("a", "an", "per", "each", "every", "of", "for", "in", "on", "at"))


def counts(text: str, end: int, counted: str) -> bool:
    """Whether the number ending at `end` counts `counted`: the word is among the next few
    ("1,100 tree species"), or the number is followed by no other thing and the sentence names
    it ("the number of tree species ... at about 15,000."), not "62 acres"."""
    wanted = set(terms(counted))
    following: list[str] = []
    for word in text[end:].split()[:COUNTED_WITHIN_WORDS]:
        if word.lower() in _ENDS_COUNTED:
            break
        following.append(word)
    if wanted <= set(terms(" ".join(following))):
        return True
    counts_another = bool(following) and bool(terms(following[0]))
    return not counts_another and wanted <= set(terms(text))


# "How many spectators ...": what is counted, which the quoted sentences must name: the last
# word of what follows before a verb or a preposition ("How many affiliated television
# stations does ABC have?": stations; "How many bytes of storage ...": bytes).
_COUNTED = re.compile(r"\bhow many ((?:[^\W\d_][\w-]*\s*)+)", re.IGNORECASE)
_ENDS_COUNTED_PHRASE = frozenset(
    (
        "are", "is", "were", "was", "do", "does", "did", "have", "has", "had", "can", "could",
        "will", "would", "should", "may", "might", "must", "there", "of", "in", "on", "at", "for",
        "from", "to", "by", "with", "per", "the", "a", "an", "that", "which", "who",
    )
)  # fmt: skip
# A figure of the question: a number of two digits or more (years, amounts, model numbers), or
# a version ("9.6", "3.11": kept with its dot, so that "9.6" is not "96").
_FIGURE = re.compile(r"(?<![\w.,])\d{1,3}(?:[,.\u202f ]\d{3})+(?![\w])|(?<![\w.,])\d{2,}(?![\w])")
_VERSION = re.compile(r"(?<![\w.,])\d{1,2}\.\d{1,2}(?![\w]|\.\d)")


# Any number as written ("7", "1,200", "3.5").
NUMBER = re.compile(r"(?<![\w.,])\d+(?:[,.\u202f ]\d{3})*(?:\.\d+)?(?![\w])")


def figures_in(text: str) -> set[str]:
    """The text's figures as digits only ("1,200" and "1200" are one figure), and its versions
    as written ("9.6")."""
    figures = {re.sub(r"\D", "", figure) for figure in _FIGURE.findall(text)}
    return figures | set(_VERSION.findall(text))


@dataclass(frozen=True)
class Needs:
    """What a question asks for, in what passages must say for them to answer it."""

    names: tuple[str, ...]
    figures: frozenset[str]
    kind: AskedKind | None
    asks_now: bool
    # The question's own words (lower case), which an answer's name must not merely repeat.
    said: frozenset[str]
    # What a "how many" question counts ("spectators"), None for any other.
    counted: str | None = None
    # It asks for a measure ("how long", "population"): a bare year does not answer it.
    asks_measure: bool = False
    # The first word of a do-question's subject ("tinyint"), None for other questions.
    subject: str | None = None
    # The question's words as written, in order.
    question_words: tuple[str, ...] = ()
    # It asks for a length ("how tall"), or for a person ("who").
    asks_length: bool = False
    asks_person: bool = False

    @classmethod
    def of(cls, question: str, names: Sequence[str]) -> Needs:
        return cls(
            names=tuple(names),
            figures=frozenset(figures_in(question)),
            kind=asked_kind(question),
            asks_now=_ASKS_NOW.search(question) is not None,
            said=frozenset(word.lower() for word in re.findall(r"[\w'’-]+", question)),
            counted=_counted(question),
            asks_measure=_ASKS_MEASURE.search(question) is not None,
            asks_length=_ASKS_LENGTH.search(question) is not None,
            asks_person=_ASKS_PERSON.search(question) is not None,
            subject=_subject(question),
            question_words=tuple(re.findall(r"[\w'’-]+", _KIND_ASKING.sub(" ", question))),
        )


def _counted(question: str) -> str | None:
    """What a "how many" question counts: the last word of the thing named after it
    ("stations" in "how many affiliated television stations does ...")."""
    counted = _COUNTED.search(question)
    if counted is None:
        return None
    written = counted.group(1).split()
    words = [word.lower() for word in written]
    # A verb or a preposition ends it, or a name after the first word ("fled France").
    ends = next(
        (
            at
            for at, word in enumerate(written)
            if word.lower() in _ENDS_COUNTED_PHRASE or (at > 0 and word[0].isupper())
        ),
        None,
    )
    # With no verb or preposition after it, the phrase may end with the verb ("How many
    # spectators attended?"): its first word is the thing counted.
    if ends is None:
        word: str | None = words[0]
    else:
        phrase = words[:ends]
        # "How many private schools existed in ...": a verb before the preposition.
        if len(phrase) > 1 and phrase[-1].endswith("ed"):
            phrase = phrase[:-1]
        word = phrase[-1] if phrase else None
    return word if word is not None and terms(word) else None


@dataclass(frozen=True)
class Verdict:
    evidence: Evidence
    # Why not `answered`, in the reader's words ("none of them mentions 2019"); None when it is.
    why: str | None = None


ANSWERED = Verdict("answered")


# What follows a person's name without naming them ("Martin Luther King Jr.").
_NAME_SUFFIXES = frozenset(("jr", "sr", "ii", "iii", "iv"))


def is_named(name: str, text: str, said: set[str]) -> bool:
    """Whether `text` (whose `terms` are `said`) mentions the name: all of its words, or, for a
    name of several words, the last one that tells it apart, written as in the name (a family
    name: "Obama" names "Barack Obama"; "Martin Luther" does not name "Martin Luther King Jr.",
    nor "the succession" "the Spanish Succession")."""
    wanted = set(terms(name))
    if not wanted:  # "V&A", "AT&T": no word of it is a term; written as it is, then
        return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None
    if wanted <= said:
        return True
    telling = [word for word in name.split() if set(terms(word)) - _NAME_SUFFIXES]
    if len(telling) < 2:
        return False
    own = {word.lower() for word in name.split()}
    for found in re.finditer(rf"(?<!\w){re.escape(telling[-1])}(?!\w)", text):
        before = _WORD_BEFORE.search(text, 0, found.start())
        # "Genghis Khan" is not "Kublai Khan", nor "the Austrian Succession" "the Spanish
        # Succession"; "President Obama" is "Barack Obama".
        if before is None or before.group(1).lower() in own | _TITLES:
            return True
    return False


# The capitalised word right before another, on the same line.
_WORD_BEFORE = re.compile(r"\b([A-Z][\w'’-]*)[ \t]+$")
# Words before a person's family name that do not make it another name.
_TITLES = frozenset(
    (
        "mr", "mrs", "ms", "dr", "sir", "dame", "lord", "lady", "saint", "st", "pope", "king",
        "queen", "prince", "princess", "emperor", "empress", "president", "general", "senator",
        "governor", "chancellor", "minister", "professor", "prof", "judge", "justice",
    )
)  # fmt: skip


# An identifier of code or configuration ("pg_trgm", "max_connections"): a name in any case.
IDENTIFIER = re.compile(r"[^\W_]_[^\W_]")


def names_mentioned(text: str, names: Sequence[str]) -> bool:
    """Whether `text` mentions one of `names` (`is_named`)."""
    said = set(terms(text))
    return any(is_named(name, text, said) for name in names)


# A passage's English, when it is written in a language with a dictionary into English and the
# dictionaries are open (`PassageGlosses.english`); None for any other.
Gloss = Callable[[str], str | None]


def no_gloss(text: str) -> str | None:
    return None


def read_with(gloss: Gloss, text: str) -> str:
    """`text` followed by its English gloss, when it has one: what the question's words are
    looked for in."""
    english = gloss(text)
    return f"{text}\n{english}" if english else text


def _said_by(entry: ContextEntry, gloss: Gloss = no_gloss) -> str:
    source = entry.source
    return f"{read_with(gloss, entry.text)}\n{source.document_name}\n{source.location or ''}"


_KIND_WORDS: dict[AskedKind, str] = {"date": "date", "number": "figure", "name": "name"}
_WHEN = re.compile(
    r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s?(?:am|pm|a\.m\.|p\.m\.)|\bo'clock\b|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekdays?|weekends?|"
    r"spring|summer|autumn|fall|winter|century|centuries|decade|ago|yesterday|today|"
    r"tomorrow|daily|weekly|monthly|annually|yearly|mornings?|afternoons?|evenings?|noon|"
    r"midnight)\b|\b\d{4}-\d{2}-\d{2}\b|"
    # A clock time in words or digits after "at" ("at eight", "at 5").
    r"\bat (?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b",
    re.IGNORECASE,
)


def _holds(text: str, kind: AskedKind, said: set[str]) -> bool:
    """Whether `text` gives something of the asked kind: for a date, a time of day, a weekday
    or a season count too ("at 09:15 every weekday")."""
    if kind == "date" and _WHEN.search(text):
        return True
    return holds_asked_kind(text, kind, said)


def verdict(
    needs: Needs,
    passages: Sequence[ContextEntry],
    spans: Sequence[str],
    *,
    are_quotes: bool = True,
    gloss: Gloss = no_gloss,
) -> Verdict:
    """What `passages` (those the answer rests on) and `spans` (the sentences it quotes, or
    with `are_quotes` false a model's answer citing them) support of what the question
    needs. `gloss`: the English of passages and quotes in other languages."""
    said = "\n".join(_said_by(entry, gloss) for entry in passages)
    glosses = [gloss(span) for span in spans]
    english = "\n".join(glossed for glossed in glosses if glossed)
    spans = [
        f"{span}\n{glossed}" if glossed else span
        for span, glossed in zip(spans, glosses, strict=True)
    ]
    missing = sorted(needs.figures - figures_in(said))
    if missing:
        return Verdict("not_in_documents", f"none of the passages mentions {', '.join(missing)}")
    if needs.subject and not set(terms(needs.subject)) <= set(terms(said)):
        return Verdict("not_in_documents", f"none of the passages mentions {needs.subject}")
    if needs.kind == "number" and not holds_asked_kind(said, "number", set()):
        return Verdict("not_in_documents", "the passages give no figure")
    said_terms = set(terms(said))
    unnamed = [name for name in needs.names if not is_named(name, said, said_terms)]
    if unnamed and len(unnamed) == len(needs.names):
        return Verdict("not_in_documents", f"none of the passages mentions {', '.join(unnamed)}")
    quoted = "\n".join(spans)
    if needs.kind is not None and spans and not _holds(quoted, needs.kind, set(needs.said)):
        return Verdict("partial", f"the quoted sentences give no {_KIND_WORDS[needs.kind]}")
    if unnamed:
        return Verdict("partial", f"the passages do not mention {', '.join(unnamed)}")
    # A quote chosen by its words may be about another thing the passage also names; a model's
    # answer read the passage and may well say "it" for what was asked.
    naming = _naming(needs.names, passages, spans) if are_quotes else list(spans)
    if spans and not naming:
        return Verdict("partial", f"the quoted sentences are not about {' or '.join(needs.names)}")
    if not are_quotes and spans and (invented := _invented_figures(needs, spans[0], said)):
        return Verdict("partial", f"the passages do not give {', '.join(invented)}")
    # A model's answer echoes the question ("The head coach now is ..."): its passages must say
    # it is still so.
    now_said = quoted if are_quotes else said
    if needs.asks_now and spans and not _speaks_of_now(now_said, date.today().year):
        return Verdict("partial", "the passages do not say it is still so; they may be out of date")
    if needs.counted and spans and not _counted_in(quoted, needs.counted):
        return Verdict("partial", f"the quoted sentences do not give the number of {needs.counted}")
    if needs.asks_measure and not needs.counted and spans and not gives_measure(quoted, english):
        return Verdict("partial", "the quoted sentences give no such figure")
    if are_quotes and spans and not any(_speaks_of_asked(needs, span) for span in naming):
        words = " or ".join(f"“{word}”" for word in _asked_words(needs))
        return Verdict("partial", f"the quoted sentences do not speak of {words}")
    return ANSWERED


# Words that say what kind of thing is asked ("in what year", "what was it called"), not what
# about.
_KIND_ASKING = re.compile(
    r"\b(?:what|which|how)\s+(?:year|date|day|month|century|decade|time|number|amount|many|much|"
    r"long|percent|percentage)\b|\b(?:called|named)\s*\?|"
    r"\bin (?:kilomet(?:re|er)s|km|miles|met(?:re|er)s|feet|inches|kilograms|kg|pounds|tons|"
    r"tonnes|dollars|euros|percent|bytes|seconds|minutes|hours|days|weeks|months|years)\b",
    re.IGNORECASE,
)
# Two words are one when their stems share this many first letters ("acquire",
# "acquisition"): a check of words, lenient on purpose.
SAME_WORD_PREFIX = 5


def _asked_words(needs: Needs) -> list[str]:
    """What the question asks about besides its names and the kind of thing it asks for: its
    other content words, as written ("born" in "In what year was Thomas Edison born?")."""
    named = {term for name in needs.names for term in terms(name)}
    words = [word for word in needs.question_words if terms(word)]
    return list(dict.fromkeys(word for word in words if not set(terms(word)) <= named))


# What a do-question is about: the first word of its subject ("How many bytes does a tinyint
# take?": tinyint), which, lower case or not, the passages must mention like a name.
_SUBJECT = re.compile(
    r"\b(?:does|do|did)\s+(?:(?:a|an|the)\s+)?([^\W\d_][\w-]*)(?:\s+([^\W\d_][\w-]*))?",
    re.IGNORECASE,
)
# A word that describes the subject rather than names it ("a plague-ridden ship", "the largest
# city"): the next word is the subject.
_DESCRIBES = re.compile(r"-|est$", re.IGNORECASE)


def _subject(question: str) -> str | None:
    found = _SUBJECT.search(question)
    if found is None:
        return None
    word = found.group(1)
    if _DESCRIBES.search(word):
        word = found.group(2) or ""
    # A name is the names' rule's ("did Barack Obama": "President Obama" names him).
    return word if terms(word) and not word[0].isupper() else None


# A quote speaks of what was asked when it holds this many of the question's content words
# besides its names (all of them, when it has fewer): `_speaks_of_asked`.
ASKED_WORDS_IN_A_QUOTE = 1


def _speaks_of_asked(needs: Needs, quote: str) -> bool:
    """Whether a quote holds one of the question's content words besides its names: a sentence
    about the right person that says nothing of what was asked ("In June 1884 he was hired by
    Thomas Edison" for when Edison was born) does not answer. (Asking two of them took 2 more
    of 63 unanswerable questions and turned 5 of 60 answerable ones partial: paraphrases.)"""
    asked = {term for word in _asked_words(needs) for term in terms(word)}
    said = set(terms(quote))
    held = [one for one in asked if any(_same_word(one, other) for other in said)]
    return len(held) >= min(ASKED_WORDS_IN_A_QUOTE, len(asked))


def _same_word(one: str, other: str) -> bool:
    if one == other:
        return True
    cut = SAME_WORD_PREFIX
    return len(one) >= cut and len(other) >= cut and one[:cut] == other[:cut]


_FIRST_SENTENCE = re.compile(r".+?(?:[.!?](?=\s)|$)", re.DOTALL)


def _invented_figures(needs: Needs, answer: str, said: str) -> list[str]:
    """The figures the first sentence of a model's answer (the answer proper) states that
    neither its passages nor the question give ("approximately 16 bytes" from passages that
    give none)."""
    first = _FIRST_SENTENCE.match(strip_markers(answer).strip())
    stated = figures_in(first.group()) if first else set()
    return sorted(stated - figures_in(said) - needs.figures)


# "more than one column", "at least one index", "one or more rows": some, not how many.
_SOME_BEFORE = re.compile(r"\b(?:more than|at least|over)\s*$", re.IGNORECASE)
_SOME_AFTER = re.compile(r"\s*or more\b", re.IGNORECASE)


def _counted_in(quoted: str, counted: str) -> bool:
    """Whether a number of the quoted sentences counts `counted` ("16,000 tree species"; not
    "more than one column", which says there may be several)."""
    numbers = [*NUMBER.finditer(quoted), *NUMBER_WORD.finditer(quoted)]
    return any(
        counts(quoted, number.end(), counted)
        and not (number.group().lower() == "one" and _says_some(quoted, number))
        for number in numbers
    )


def _says_some(text: str, number: re.Match[str]) -> bool:
    return bool(
        _SOME_BEFORE.search(text, 0, number.start()) or _SOME_AFTER.match(text, number.end())
    )


def gives_asked(needs: Needs) -> Callable[[str], bool] | None:
    """What a sentence must hold to answer a question that asks for a figure or a date: the
    count of what a "how many" question counts, a figure, a date; None for other questions."""
    kind, counted = needs.kind, needs.counted
    if kind == "number" and counted:
        return lambda text: _counted_in(text, counted)
    if kind == "number" or kind == "date":
        return lambda text: _holds(text, kind, set())
    return None


def _naming(
    names: Sequence[str], passages: Sequence[ContextEntry], spans: Sequence[str]
) -> list[str]:
    """The quoted sentences that are about one of the question's names: they name it, or the
    document they come from does in its name or location (a passage of "Nikola Tesla" may say
    "He ..."). All of them when the question names nothing. Each quote `spans[i]` is of
    `passages[i]`."""
    if not names:
        return list(spans)
    return [
        span
        for span, entry in zip(spans, passages, strict=True)
        if names_mentioned(
            f"{span}\n{entry.source.document_name}\n{entry.source.location or ''}", names
        )
    ]


# A sentence of an answer ends at its stop, but a marker after the stop ("nine. [1]") is its own.
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?!\[\d)")
# A cited passage supports a sentence that shares this many of its content words with it, or
# this share of them (and every figure the sentence gives).
SUPPORT_SHARED_TERMS = 3
SUPPORT_SHARED_SHARE = 0.3


def supports(claim: str, entry: ContextEntry) -> bool:
    """Whether the passage bears out the sentence: it gives every figure the sentence gives,
    and (in the same language) shares enough of its words. A check of words, lenient on
    purpose: it takes out citations of passages about something else, not paraphrases."""
    said = _said_by(entry)
    if figures_in(claim) - figures_in(said):
        return False
    words = set(terms(claim))
    if not words or language_of(claim) != language_of(entry.text):
        return True
    shared = words & set(terms(said))
    return len(shared) >= SUPPORT_SHARED_TERMS or len(shared) / len(words) >= SUPPORT_SHARED_SHARE


def unsupported_removed(answer: str, entries: Sequence[ContextEntry]) -> tuple[str, int]:
    """The answer without the [n] markers whose passage does not support the sentence they
    follow (`supports`), and how many were taken out. Markers of no passage are left to
    `apply_citations`."""
    by_number = {entry.number: entry for entry in entries}
    removed = 0

    def checked(sentence: str) -> str:
        nonlocal removed
        claim = strip_markers(sentence)
        clause_start = 0
        clause = claim

        def kept(marker: re.Match[str]) -> str:
            # A marker inside a sentence stands for the words since the one before it ("a
            # lighthouse [1], a ferry [2]"; "[1][2]": both for the same words), or the
            # sentence as a whole.
            nonlocal removed, clause_start, clause
            words = strip_markers(sentence[clause_start : marker.start()])
            clause = words if terms(words) else clause
            clause_start = marker.end()
            numbers = [int(raw) for raw in marker.group(2).split(",")]
            keep = [
                n
                for n in numbers
                if n not in by_number
                or supports(clause, by_number[n])
                or supports(claim, by_number[n])
            ]
            removed += len(numbers) - len(keep)
            return marker.group(1) + "".join(f"[{n}]" for n in keep) if keep else ""

        return SPACED_MARKER.sub(kept, sentence)

    parts = _SENTENCES.split(answer)
    separators = _SENTENCES.findall(answer)
    checked_parts = [checked(part) for part in parts]
    text = checked_parts[0] + "".join(
        separator + part for separator, part in zip(separators, checked_parts[1:], strict=True)
    )
    return text, removed

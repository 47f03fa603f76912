"""Follow-up questions searched with their conversation, without a model call.

"When did they arrive?" after "Who were the Normans?" matches nothing by its own words: the
subject is in the earlier question. A question that refers back (a pronoun standing for
something said before) or is elliptical ("And the population?", "What about 1990?") is
searched together with the previous question; any other question is searched as asked, so a
change of subject is not dragged back to the last one. With a model configured,
`RAG_REFORMULATE` rewrites follow-ups instead (`answers.engine`).

The words are English: a question with no English words (another script) is searched as asked
(issue 41)."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Words that point back to something said before. Not "that" or "there": most often they
# point nowhere ("the team that won", "is there a fee"); "this" only on its own ("What is
# this?"), not before a noun ("this policy" names what it means).
REFERRING = frozenset(
    {
        "it", "its", "itself", "they", "them", "their", "theirs", "themselves",
        "he", "him", "his", "himself", "she", "her", "hers", "herself",
        "these", "those", "former", "latter",
    }
)  # fmt: skip
# "it" that stands for nothing: "is it possible to", "how long does it take to ...".
_EMPTY_IT = re.compile(
    r"\b(?:is|was|would|will|be|isn't)\s+it\s+(?:possible|necessary|true|ok|okay|safe|allowed|"
    r"worth|better|normal|required|legal|free|easy|hard)\b"
    r"|\bit\s+(?:is|was|be)\s+(?:possible|necessary|true|safe|allowed|required|legal|easy|hard)\b"
    # "How long does it take to process a refund?", not "How long does it take?" (the crossing).
    r"|\b(?:does\s+it\s+take|it\s+takes?|did\s+it\s+take)\b[^?.!]*\bto\b"
)
_THIS_ALONE = re.compile(r"\bthis\s*(?:[?.!,]|$|\b(?:is|was|does|did|mean|means|say|says)\b)")
# Openings of an elliptical question: it continues the last one when it names at most one
# thing of its own ("And the population?"); "And the weather in Oslo?" changes the subject.
_ELLIPTICAL = re.compile(r"^\s*(?:and|but|also|what about|how about|and what about)\b")
ELLIPTICAL_WORDS = 1
# Words that name nothing of their own (question words, auxiliaries, fillers).
_FUNCTION_WORDS = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "so", "of", "in", "on", "at", "to", "for", "from",
        "by", "with", "about", "as", "what", "which", "who", "when", "where", "why", "how",
        "is", "are", "was", "were", "be", "do", "does", "did", "can", "could", "would", "will",
        "has", "have", "had", "much", "many", "also", "then", "else", "any", "some", "there",
        "that", "this", "i", "you", "we", "me", "us", "my", "your", "our",
    }
)  # fmt: skip

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def refers_back(question: str) -> bool:
    """Whether `question` needs the conversation to be searched (known from its words alone)."""
    lowered = question.lower()
    words = [word.removesuffix("'s") for word in _WORD.findall(lowered)]
    if not words:
        return False
    if _THIS_ALONE.search(lowered):
        return True
    if _ELLIPTICAL.search(lowered):
        named = [word for word in words if word not in _FUNCTION_WORDS]
        if len(named) <= ELLIPTICAL_WORDS:
            return True
    pointing = [word for word in words if word in REFERRING]
    if pointing == ["it"] * len(pointing) and pointing and _EMPTY_IT.search(lowered):
        return False
    return bool(pointing)


def search_query(question: str, history: Sequence[dict[str, str]]) -> str:
    """What to search for `question`: with the previous question before it when it refers
    back to the conversation, else its own words."""
    if not refers_back(question):
        return question
    previous = next(
        (turn["content"] for turn in reversed(history) if turn.get("role") == "user"), None
    )
    return f"{previous}\n{question}" if previous else question

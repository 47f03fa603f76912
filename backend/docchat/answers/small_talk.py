"""Small talk: a message that is only a greeting, thanks, a goodbye or "how are you".

With the built-in demo model (135M parameters) docchat answers no question from general
knowledge (its facts are invented); small talk is the exception, and it is told by this fixed
rule, not by the model: the message, lower-cased and without punctuation, is one or more of the
phrases below, in the languages questions are most asked in (those of
`citations.INSUFFICIENT_PHRASES`), with perhaps the assistant's name, and nothing else.
"""

from __future__ import annotations

import re
import unicodedata

PHRASES = (
    # English
    "hi", "hello", "hey", "hey there", "hi there", "hello there", "good morning",
    "good afternoon", "good evening", "good night", "thanks", "thank you", "thank you very much",
    "thanks a lot", "many thanks", "cheers", "bye", "goodbye", "see you", "how are you",
    "how are you doing", "how is it going", "how's it going", "what's up", "ok", "okay",
    "great", "nice", "cool", "you too", "welcome", "you're welcome", "no problem",
    # German
    "hallo", "guten morgen", "guten tag", "guten abend", "gute nacht", "servus", "moin",
    "danke", "danke schön", "danke sehr", "vielen dank", "tschüss", "auf wiedersehen",
    "wie geht's", "wie geht es dir", "wie geht es ihnen", "alles klar", "gut", "super",
    # French
    "bonjour", "bonsoir", "salut", "coucou", "merci", "merci beaucoup", "au revoir",
    "bonne nuit", "comment ça va", "ça va", "comment allez-vous", "d'accord",
    # Spanish
    "hola", "buenos días", "buenas tardes", "buenas noches", "gracias", "muchas gracias",
    "adiós", "hasta luego", "qué tal", "cómo estás", "vale",
    # Italian
    "ciao", "buongiorno", "buonasera", "grazie", "grazie mille", "arrivederci", "come stai",
    # Portuguese
    "olá", "oi", "bom dia", "boa tarde", "boa noite", "obrigado", "obrigada", "tchau",
    "tudo bem", "como vai",
    # Dutch
    "hoi", "goedemorgen", "goedemiddag", "goedenavond", "dank je", "dank je wel", "dank u",
    "bedankt", "doei", "hoe gaat het",
    # Russian
    "привет", "здравствуйте", "спасибо", "большое спасибо", "пока", "до свидания",
    "как дела",
    # Chinese, Japanese
    "你好", "您好", "谢谢", "再见",
    "こんにちは", "ありがとう", "ありがとうございます", "さようなら",
)  # fmt: skip
# Words that may come with a phrase without making the message more than small talk.
ADDRESSED = ("docchat", "bot", "there", "again", "so", "very", "much", "all", "everyone")
# Longer than this many words, a message is asking something.
MAX_WORDS = 8


def _normalised(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    return " ".join(re.sub(r"[^\w\s'-]+", " ", folded).split())


_PHRASE = "|".join(
    re.escape(phrase) for phrase in sorted({_normalised(p) for p in PHRASES}, key=len, reverse=True)
)
_ADDRESSED = "|".join(re.escape(word) for word in ADDRESSED)
_SMALL_TALK = re.compile(rf"(?:(?:{_PHRASE}|{_ADDRESSED})(?:\s+|$))+")
_ANY_PHRASE = re.compile(rf"(?:^|\s)(?:{_PHRASE})(?:\s|$)")


def is_small_talk(message: str) -> bool:
    """Whether the message is nothing but greetings, thanks, goodbyes or "how are you"."""
    text = _normalised(message)
    if not text or len(text.split()) > MAX_WORDS:
        return False
    # Of phrases and addressing words only, and a phrase among them ("so much" is no thanks).
    return _SMALL_TALK.fullmatch(text) is not None and _ANY_PHRASE.search(text) is not None

"""Text that users chose (a failed login's email, file, collection and group names), made safe
to keep in the audit log and to show in the administrator's view of it.

A raw value could forge entries or hide what happened: CR/LF and the line and paragraph
separators start a new line in any log or terminal it is copied to, bidi overrides (U+202E)
and other format characters reorder or hide the text around them, NULs cut it off. So the
text is NFC-normalised, every control (Cc), format (Cf), line/paragraph separator (Zl, Zp)
and lone surrogate (Cs) is written as a visible escape (`\\r`, `\\n`, `\\t`, `\\u202e`,
`\\U000e0041`), a backslash as `\\\\` (so an escape written by the user cannot pass for one
made here), and the result is cut to `MAX_CHARS` characters, the last of them `…`.
"""

from __future__ import annotations

import unicodedata
from typing import Any

MAX_CHARS = 320  # the longest email address, and the audit log's actor_email column
CUT_MARK = "…"
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
SHORT_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
# NFC can at most roughly triple-shrink text (Hangul jamo), so this much input always fills
# the limit: longer input is cut before normalising, which keeps the work bounded.
READ_FACTOR = 4


def _visible(character: str) -> str:
    if character in SHORT_ESCAPES:
        return SHORT_ESCAPES[character]
    if unicodedata.category(character) not in ESCAPED_CATEGORIES:
        return character
    code = ord(character)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def audit_text(value: str, max_chars: int = MAX_CHARS) -> str:
    """`value` as the audit log keeps it: one line, in logical order, at most `max_chars`."""
    cut = len(value) > max_chars * READ_FACTOR
    pieces = [_visible(c) for c in unicodedata.normalize("NFC", value[: max_chars * READ_FACTOR])]
    if not cut and sum(len(piece) for piece in pieces) <= max_chars:
        return "".join(pieces)
    kept: list[str] = []
    room = max_chars - len(CUT_MARK)
    for piece in pieces:
        if len(piece) > room:
            break
        kept.append(piece)
        room -= len(piece)
    return "".join(kept) + CUT_MARK


def audit_detail(value: Any) -> Any:
    """A copy of a JSON-like value with every string in it (keys too) made `audit_text`."""
    if isinstance(value, str):
        return audit_text(value)
    if isinstance(value, dict):
        return {audit_detail(key): audit_detail(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [audit_detail(item) for item in value]
    return value

"""Tokens estimated offline (no tokenizer download): four characters each, which over-counts
for English and keeps other scripts on the safe side of a budget or a quota."""

from __future__ import annotations

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN

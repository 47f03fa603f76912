"""How close OCR output is to a page's true text."""

from __future__ import annotations

import difflib


def words(text: str) -> str:
    return " ".join(text.split())


def character_accuracy(read: str, truth: str) -> float:
    """Share of the true text's characters that OCR read, in order (spacing ignored): the
    matched characters of the longest common subsequences over the true text's length."""
    matcher = difflib.SequenceMatcher(None, words(read), words(truth), autojunk=False)
    return sum(block.size for block in matcher.get_matching_blocks()) / max(1, len(words(truth)))

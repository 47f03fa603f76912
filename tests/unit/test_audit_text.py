"""How user-chosen text is kept in the audit log (audit.text)."""

from __future__ import annotations

import pytest

from docchat.audit.text import MAX_CHARS, audit_detail, audit_text


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("olga@example.com", "olga@example.com"),
        ("evil\r\nadmin logged in\u202e", "evil\\r\\nadmin logged in\\u202e"),
        ("a\tb\x00c\x7f", "a\\tb\\u0000c\\u007f"),
        ("line\u2028para\u2029", "line\\u2028para\\u2029"),
        (
            "\u2066isolate\u2069 zero\u200bwidth \ufeff",
            "\\u2066isolate\\u2069 zero\\u200bwidth \\ufeff",
        ),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("lone \ud800", "lone \\ud800"),
        ("back\\slash \\u202e", "back\\\\slash \\\\u202e"),  # a typed escape is not a real one
        ("cafe\u0301 bücher", "café bücher"),  # NFC
    ],
)
def test_controls_and_format_characters_become_visible_escapes(raw: str, kept: str) -> None:
    assert audit_text(raw) == kept


def test_long_text_is_cut_with_a_mark_and_never_inside_an_escape() -> None:
    assert audit_text("x" * MAX_CHARS) == "x" * MAX_CHARS
    cut = audit_text("x" * 316 + "\u202e" * 10)
    assert cut == "x" * 316 + "…" and len(cut) <= MAX_CHARS
    huge = audit_text("\u202e" * 10**6)
    assert len(huge) <= MAX_CHARS and huge.endswith("\\u202e…")


def test_every_string_of_a_detail_is_kept_as_audit_text() -> None:
    detail = {"name\n": ["a\rb", {"c": "\u202e"}], "count": 3, "on": True, "none": None}
    assert audit_detail(detail) == {
        "name\\n": ["a\\rb", {"c": "\\u202e"}],
        "count": 3,
        "on": True,
        "none": None,
    }

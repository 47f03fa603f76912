"""Text search in SQL that takes the user's text literally."""

from __future__ import annotations

from sqlalchemy import ColumnElement, SQLColumnExpression

LIKE_ESCAPE = "\\"


def containing(fragment: str) -> str:
    """A LIKE pattern (escaped with `LIKE_ESCAPE`) for text that holds `fragment`, its `%` and
    `_` taken as themselves."""
    escaped = (
        fragment.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )
    return f"%{escaped}%"


def contains(column: SQLColumnExpression[str], fragment: str) -> ColumnElement[bool]:
    """`column` holds `fragment` in any case, its `%` and `_` taken as themselves."""
    return column.ilike(containing(fragment), escape=LIKE_ESCAPE)

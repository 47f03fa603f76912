"""Text search in SQL that takes the user's text literally."""

from __future__ import annotations

from sqlalchemy import ColumnElement, SQLColumnExpression

LIKE_ESCAPE = "\\"


def contains(column: SQLColumnExpression[str], fragment: str) -> ColumnElement[bool]:
    """`column` holds `fragment` in any case, its `%` and `_` taken as themselves."""
    escaped = (
        fragment.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )
    return column.ilike(f"%{escaped}%", escape=LIKE_ESCAPE)

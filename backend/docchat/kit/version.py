"""The installed docchat's version, as its package metadata gives it (pyproject.toml's)."""

from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

UNKNOWN = "0+unknown"  # run from a source tree that was never installed


@cache
def package_version() -> str:
    try:
        return version("docchat")
    except PackageNotFoundError:
        return UNKNOWN

"""The README's "Where a change lands" table, and its longer twin in docs/architecture.md, stay
true: every file or folder a row names exists, every registry it names is one the code has, a
row's count is the files it names, and the two documents agree on the counts. The layer table
of docs/architecture.md places each package where `tests/unit/test_architecture.py` does."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import docchat.main.components  # noqa: F401  (imports every module that declares a registry)
from docchat.kit.registry import Registry
from tests.unit.test_architecture import RANK

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "backend" / "docchat"
# Paths in the tables are under backend/docchat/ unless they start with one of these.
FROM_ROOT = ("tests/", "frontend/", "scripts/", "docs/", "migrations/")
PATH = re.compile(r"^[\w./-]+(/|\.(py|sh|tsx?|json|md))$")


def _section(document: Path, heading: str) -> str:
    text = document.read_text()
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else None]


def _table(document: Path, heading: str) -> list[tuple[str, list[str]]]:
    """The first table under the heading: each row's first cell and the others."""
    rows = []
    for line in _section(document, heading).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and not set(cells[0]) <= {"-", " "}:
            rows.append((cells[0], cells[1:]))
    return rows[1:]  # below the header


def _rows(document: Path, heading: str) -> dict[str, list[str]]:
    return dict(_table(document, heading))


def _paths(text: str) -> list[str]:
    return list(dict.fromkeys(name for name in re.findall(r"`([^`]+)`", text) if PATH.match(name)))


def _where(path: str) -> Path:
    return ROOT / path if path.startswith(FROM_ROOT) else PACKAGE / path


def _registries() -> set[str]:
    return {
        name
        for module_name, module in list(sys.modules.items())
        if module_name.startswith("docchat.")
        for name, value in vars(module).items()
        if isinstance(value, Registry)
    }


def _change(name: str) -> str:
    """ "another embedder" and "embedder" are one change."""
    return re.sub(r"^(a|an|another) ", "", name)


README = _rows(ROOT / "README.md", "## Where a change lands")
ARCHITECTURE = _rows(ROOT / "docs" / "architecture.md", "## Where a change lands")
# "files (3; a note)": the count, and the note after it (no files of the change).
README_COUNT = re.compile(r"\((\d+)(;[^()]*(\([^()]*\)[^()]*)*)?\)\s*$")


def _readme_count(files: str) -> tuple[str, int | None]:
    found = README_COUNT.search(files)
    if found is None:
        return files, None
    return files[: found.start()], int(found.group(1))


def test_the_tables_are_found() -> None:
    assert len(README) >= 5 and len(ARCHITECTURE) >= 5
    assert {"sync connector", "embedder"} <= {_change(name) for name in README}


@pytest.mark.parametrize(
    ("document", "change", "files"),
    [("README.md", name, cells[0]) for name, cells in README.items()]
    + [("docs/architecture.md", name, cells[0]) for name, cells in ARCHITECTURE.items()],
)
def test_every_file_and_registry_a_row_names_exists(document: str, change: str, files: str) -> None:
    missing = [path for path in _paths(files) if not _where(path).exists()]
    assert missing == [], f"{document}, {change}: no such file or folder"
    registries = set(re.findall(r"`(\w+)\.register`", files))
    assert registries <= _registries(), f"{document}, {change}: no such registry"


@pytest.mark.parametrize("change", list(README))
def test_a_readme_count_is_the_files_its_row_names(change: str) -> None:
    files, count = _readme_count(README[change][0])
    if count is not None:
        assert len(_paths(files)) == count, _paths(files)


def test_the_two_tables_agree_on_the_counts() -> None:
    readme = {_change(name): _readme_count(cells[0])[1] for name, cells in README.items()}
    docs = {_change(name): int(cells[-1]) for name, cells in ARCHITECTURE.items()}
    shared = [name for name, count in readme.items() if count is not None]
    assert {name: docs.get(name) for name in shared} == {name: readme[name] for name in shared}


def test_a_connector_and_an_embedder_take_three_files() -> None:
    counts = {_change(name): _readme_count(cells[0])[1] for name, cells in README.items()}
    assert counts["sync connector"] == 3 and counts["embedder"] == 3


def test_the_layer_table_places_packages_as_the_architecture_test_does() -> None:
    documented = {
        package: int(layer)
        for layer, cells in _table(ROOT / "docs" / "architecture.md", "## Code layout")
        for package in re.findall(r"`(\w+)`", cells[0])
    }
    assert documented == RANK


def test_the_readme_layer_table_agrees_with_the_architecture_test() -> None:
    """Its rows span layers ("4-5"; "top" is the last): each package in its row's span."""
    top = max(RANK.values())
    misplaced = {}
    listed = set()
    for layers, cells in _table(ROOT / "README.md", "## Architecture"):
        low, _, high = layers.replace("top", str(top)).partition("-")
        span = range(int(low), int(high or low) + 1)
        for package in re.findall(r"`(\w+)`", cells[0]):
            listed.add(package)
            if RANK.get(package) not in span:
                misplaced[package] = layers
    assert misplaced == {}, "the architecture test places these elsewhere"
    assert listed == set(RANK)

"""The shape of the code base: every module of `docchat` sits in a layer, and imports only from
the layers below its own (or from its own package). Routers are no exception: a route lives in
the package high enough to use what it needs, and the wiring (`docchat.main`: the application
factory, the command line, the components built at start) is on top, imported by nothing.

A new package or top-level module must be given its place in `LAYERS`: the test fails until
it is, so where a piece sits is always a decision.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "docchat"

# Lowest first. A unit is a package (`documents`) or a top-level module (`config`).
LAYERS: list[set[str]] = [
    {"config", "db"},
    {"kit"},
    {"metrics", "tracing"},
    {"extraction", "llm", "events", "audit", "replicas"},
    {"retrieval", "users"},
    {"membership", "quotas", "auth"},
    {"categories"},
    {"documents"},
    {"sharing", "answers", "ingestion"},
    {"chats", "openai_compat", "identity", "sources"},
    {"account"},  # a person's own data reads their chats too
    {"admin", "mcp_server"},  # administrators decide about accounts (deletion)
    {"models"},  # every table, for Alembic and worker-only processes
    {"main"},
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _unit(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _module_name(path: Path) -> str:
    """`docchat.chats.flow` for chats/flow.py, `docchat.chats` for chats/__init__.py."""
    parts = ("docchat", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module an `ImportFrom` reads from, relative imports resolved against `module`."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imported_units(
    tree: ast.AST, module: str = "docchat", is_package: bool = False
) -> Iterator[tuple[str, int]]:
    """The docchat units an importing module (dotted name) reads, each with its line."""
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, is_package)
            # `from docchat import chats` names its units in the aliases.
            names = (
                [f"docchat.{alias.name}" for alias in node.names]
                if source == "docchat"
                else [source]
            )
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "docchat" and len(parts) > 1:
                yield parts[1], node.lineno


def _modules() -> list[Path]:
    return sorted(
        p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE
    )


def _imports() -> list[tuple[str, str, str]]:
    """(importing unit, imported unit, where) for every import between two units."""
    found = []
    for path in _modules():
        unit = _unit(path)
        tree = ast.parse(path.read_text())
        module, is_package = _module_name(path), path.name == "__init__.py"
        for imported, line in _imported_units(tree, module, is_package):
            if imported != unit:
                found.append((unit, imported, f"{path.relative_to(PACKAGE)}:{line}"))
    return found


@pytest.mark.parametrize(
    ("source", "module", "is_package", "units"),
    [
        ("import docchat.chats.flow", "docchat.account.export", False, ["chats"]),
        ("from docchat.chats import flow", "docchat.account.export", False, ["chats"]),
        ("from docchat import chats", "docchat.account.export", False, ["chats"]),
        ("from docchat import main, tracing", "docchat.kit.errors", False, ["main", "tracing"]),
        ("from ..chats import flow", "docchat.account.export", False, ["chats"]),
        ("from .. import chats", "docchat.account.export", False, ["chats"]),
        ("from ..main.app import create_app", "docchat.kit.errors", False, ["main"]),
        ("from . import export", "docchat.account.router", False, ["account"]),
        ("from .export import build", "docchat.account.router", False, ["account"]),
        ("from . import router", "docchat.account", True, ["account"]),
        ("from .. import main", "docchat.account", True, ["main"]),
        ("from . import tracing", "docchat.config", False, ["tracing"]),
        ("import sqlalchemy", "docchat.db", False, []),
        ("from sqlalchemy import select", "docchat.db", False, []),
    ],
)
def test_every_form_of_import_is_resolved(
    source: str, module: str, is_package: bool, units: list[str]
) -> None:
    found = [unit for unit, _ in _imported_units(ast.parse(source), module, is_package)]
    assert found == units


def test_every_module_has_a_layer() -> None:
    units = {_unit(path) for path in _modules()}
    unplaced = sorted(units - set(RANK))
    assert not unplaced, f"give these a place in LAYERS: {unplaced}"


def test_imports_only_go_down() -> None:
    upward = [
        f"{where}: {unit} imports {imported}"
        for unit, imported, where in _imports()
        if RANK.get(imported, -1) >= RANK[unit]
    ]
    assert upward == [], "imports that do not go down a layer:\n" + "\n".join(upward)


def test_nothing_imports_the_wiring() -> None:
    assert [where for unit, imported, where in _imports() if imported == "main"] == []


def test_the_layers_hold_what_the_design_says() -> None:
    # The file readers know nothing of documents or the database; retrieval knows nothing of
    # documents or the worker; the answer engine nothing of chats.
    assert RANK["extraction"] < RANK["retrieval"] < RANK["documents"] < RANK["ingestion"]
    assert RANK["answers"] < RANK["chats"] and RANK["answers"] < RANK["openai_compat"]

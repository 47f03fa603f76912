"""The shape of the code base: domain packages depend on each other without cycles.

The HTTP edge (each package's `router.py`, `*_router.py` and `dependencies.py`) may use any
package: routes sit on top. Below it, if package A imports package B, B must not import A,
directly or through others; `extraction` and `kit` sit below everything that reads or serves
files.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "docchat"
HTTP_EDGE = {"router.py", "dependencies.py"}


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("docchat."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("docchat."):
                    found.add(alias.name.split(".")[1])
    return found


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for package in (p for p in PACKAGE.iterdir() if (p / "__init__.py").exists()):
        uses: set[str] = set()
        for module in package.glob("*.py"):
            if module.name not in HTTP_EDGE and not module.name.endswith("_router.py"):
                uses |= _imports(module)
        graph[package.name] = {used for used in uses if used != package.name}
    return graph


def _cycle_from(start: str, graph: dict[str, set[str]]) -> list[str] | None:
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        path.append(node)
        for following in sorted(graph.get(node, ())):
            if following in graph and (cycle := visit(following)):
                return cycle
        path.pop()
        return None

    return visit(start)


def test_domain_packages_have_no_import_cycles() -> None:
    graph = _package_graph()
    assert {"answers", "retrieval", "extraction", "documents", "ingestion"} <= set(graph)
    cycles = [cycle for name in sorted(graph) if (cycle := _cycle_from(name, graph))]
    assert not cycles, f"package cycles: {cycles[0]}"


def test_the_lower_layers_do_not_reach_up() -> None:
    graph = _package_graph()
    assert graph["extraction"] <= {"kit"}
    assert graph["kit"] == set()
    assert "documents" not in graph["retrieval"] and "ingestion" not in graph["retrieval"]

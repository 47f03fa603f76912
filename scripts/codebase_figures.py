"""Print the figures docs/architecture.md cites about backend/docchat: SQL calls on a session
outside repositories (the rule and its exceptions are tests/unit/test_sql_in_repositories.py),
the largest module and the largest function, in lines."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "backend" / "docchat"
RULE = ROOT / "tests" / "unit" / "test_sql_in_repositories.py"


def _load_rule() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sql_rule", RULE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _functions() -> list[tuple[int, str]]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno:
                lines = node.end_lineno - node.lineno + 1
                found.append((lines, f"{path.relative_to(PACKAGE)}:{node.name}"))
    return found


def main() -> None:
    rule = _load_rule()
    outside = rule.calls_outside_repositories()
    counted = sum(len(calls) for calls in outside.values())
    listed = sum(len(calls) for name, calls in outside.items() if name in rule.EXCEPTIONS)
    everywhere = sum(
        len(list(rule.session_calls(ast.parse(path.read_text())))) for path in PACKAGE.rglob("*.py")
    )
    print(f"SQL calls on a session outside repositories: {counted} of {everywhere}")
    print(f"  in the listed exceptions: {listed}; elsewhere: {counted - listed}")
    for name, calls in sorted(outside.items(), key=lambda item: -len(item[1])):
        print(f"    {len(calls):3d} {name}")
    modules = [(len(p.read_text().splitlines()), p) for p in PACKAGE.rglob("*.py")]
    lines, path = max(modules)
    print(f"largest module: {path.relative_to(PACKAGE)} ({lines} lines)")
    lines, name = max(_functions())
    print(f"largest function: {name} ({lines} lines)")


if __name__ == "__main__":
    main()

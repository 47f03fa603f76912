"""SQL lives in repositories: a session call that reads or writes rows anywhere else fails this
test, unless its module is in `EXCEPTIONS` with the reason (the one list of them). A repository
is a package's `repository.py`, or `<what>_repository.py` where one package keeps the SQL of
two things apart (`documents/jobs_repository.py`: the processing queue).

What counts is a call on a session (a name `session` or `..._session`, which is what every
signature here calls an `AsyncSession`; `test_a_session_is_called_a_session` keeps it so):

- in `SQL_CALLS`, the calls that run a statement or choose which rows are written: `execute`,
  `scalar`, `scalars`, `get`, `get_one`, `stream`, `stream_scalars`, `refresh`, `connection`,
  `run_sync`, and `add`, `add_all`, `delete`, `merge` (a repository's create and delete);
- not counted, the unit of work and the transaction, which the caller owns (CONVENTIONS.md, rule
  3: services flush; the route class, the worker and a stream's own sessions commit): `flush`,
  `commit`, `rollback`, `begin`, `begin_nested`, `close`, `expire`, `expire_all`, `expunge`,
  `in_transaction`. A flush writes only what a repository call or a change to a loaded row
  already decided.

`python scripts/codebase_figures.py` prints the count outside repositories.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "docchat"

SQL_CALLS = frozenset(
    {
        "execute",
        "scalar",
        "scalars",
        "get",
        "get_one",
        "stream",
        "stream_scalars",
        "refresh",
        "connection",
        "run_sync",
        "add",
        "add_all",
        "delete",
        "merge",
    }
)
SESSION_NAME = re.compile(r"^_*(\w+_)?session$")

# Modules (relative to backend/docchat) that may call a session outside a repository.
EXCEPTIONS: dict[str, str] = {
    # the infrastructure that runs what repositories build
    "db.py": "the sessions' own module: `advisory_lock`, the transaction lock any layer takes",
    "kit/pagination.py": "runs the page and the count of a statement a repository built",
    "main/doctor.py": "`docchat doctor`: the migration at head and the database's clock",
    "main/health.py": "the readiness probe: the migrations table answers",
}


def _receiver(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def session_calls(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, method) of every SQL call on a session in a module, in line order."""
    for node in sorted(ast.walk(tree), key=lambda node: getattr(node, "lineno", 0)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        receiver = _receiver(node.func.value)
        if receiver and SESSION_NAME.match(receiver) and node.func.attr in SQL_CALLS:
            yield node.lineno, node.func.attr


def _modules() -> Iterator[tuple[str, ast.AST]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())


def _is_repository(name: str) -> bool:
    return Path(name).name == "repository.py" or name.endswith("_repository.py")


def calls_outside_repositories() -> dict[str, list[tuple[int, str]]]:
    """Every module other than a `repository.py` with SQL calls on a session, with them."""
    found = {}
    for name, tree in _modules():
        if not _is_repository(name) and (calls := list(session_calls(tree))):
            found[name] = calls
    return found


def test_sql_is_only_in_repositories() -> None:
    stray = [
        f"{name}:{line}: session.{method}"
        for name, calls in calls_outside_repositories().items()
        if name not in EXCEPTIONS
        for line, method in calls
    ]
    assert stray == [], "move these into the package's repository.py:\n" + "\n".join(stray)


def test_every_exception_is_still_needed() -> None:
    stale = sorted(set(EXCEPTIONS) - set(calls_outside_repositories()))
    assert stale == [], f"no SQL left in these, take them off EXCEPTIONS: {stale}"


def _annotation(argument: ast.arg) -> str:
    return ast.unparse(argument.annotation) if argument.annotation else ""


def _session_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, name) of every session a module names: the parameters typed as one, and what
    `async with ...sessionmaker() as name` opens."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for argument in arguments:
                if re.fullmatch(r"(AsyncSession|SessionDep)( \| None)?", _annotation(argument)):
                    yield node.lineno, argument.arg
        elif isinstance(node, ast.AsyncWith):
            for item in node.items:
                opened = item.context_expr
                if (
                    isinstance(opened, ast.Call)
                    and ast.unparse(opened.func).endswith("sessionmaker")
                    and isinstance(item.optional_vars, ast.Name)
                ):
                    yield node.lineno, item.optional_vars.id


def test_a_session_is_called_a_session() -> None:
    # The rule finds sessions by name, so a session must be named like one.
    misnamed = [
        f"{name}:{line}: {session}"
        for name, tree in _modules()
        if name not in EXCEPTIONS
        for line, session in _session_names(tree)
        if not SESSION_NAME.match(session)
    ]
    assert misnamed == []


def test_the_rule_sees_the_forms_a_session_is_called_in() -> None:
    source = """
async def f(session, self):
    await session.execute(statement)
    await self._session.get(User, 1)
    self.db_session.add(row)
    await session.flush()
    await session.commit()
    sessions.get(key)
    await connection.execute(statement)
    async with self.sessionmaker() as own:
        await own.execute(statement)
"""
    tree = ast.parse(source)
    assert list(session_calls(tree)) == [(3, "execute"), (4, "get"), (5, "add")]
    assert [name for _, name in _session_names(tree)] == ["own"]

"""Each part of the code is given the settings group it needs, not the whole `Settings`: the
wiring (`docchat.main`) builds the parts from the groups. The modules below still take the
whole object, each for a reason given; a new one fails this test until it is narrowed or listed.
"""

from __future__ import annotations

import ast
from pathlib import Path

from docchat.config import RAG_PREFIX, Settings

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "docchat"

# Module (relative to docchat/) -> why it takes the whole `Settings`.
TAKES_THE_WHOLE = {
    "kit/routing.py": "SettingsDep: the dependency routes take their groups from",
    "auth/signing_key.py": "with_signing_key: the settings with the generated key, at start",
    "retrieval/index.py": "VectorStoreSettings: a registered store's maker reads what it needs",
    "chats/flow.py": "MessageFlow: a chat answer's composition (quota, search, history, ...)",
    "chats/turns.py": "start_turn: hands each step its group (search, answers, history, llm)",
    "identity/router.py": "routes: they take their groups from SettingsDep",
    "account/deletion.py": "the folders sources keep what they fetched in (data_dir)",
    "sources/service.py": "a source's settings and their encryption key (auth, sources)",
    "sources/sync.py": "the syncer reads the settings a source runs with",
    "sources/connector.py": "credentials (auth), folder roots, fetch rules, sizes",
    "sources/items.py": "one item stored as an upload is (limits, storage, the connector)",
    "ingestion/pipeline.py": "one document's way in: limits, chunking, OCR, the lexical language",
    "ingestion/worker.py": "the worker: limits, chunking, OCR and the lease",
    "ingestion/upgrade.py": "the upgrade at start: the stores' and the indexes' settings",
}


def _takes_the_whole_settings(path: Path) -> bool:
    text = path.read_text(encoding="utf-8")
    if "Settings" not in text:
        return False
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "docchat.config"
        and any(alias.name == "Settings" for alias in node.names)
        for node in ast.walk(ast.parse(text))
    )


def test_only_the_listed_modules_take_the_whole_settings() -> None:
    taking = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.relative_to(PACKAGE).parts[0] not in {"main", "config.py"}
        and _takes_the_whole_settings(path)
    }
    listed = set(TAKES_THE_WHOLE)
    assert not taking - listed, f"give these their groups: {sorted(taking - listed)}"
    assert not listed - taking, f"narrowed: drop them from the list: {sorted(listed - taking)}"


def test_the_rag_groups_read_the_rag_variables() -> None:
    """The `RAG_*` groups are split by what reads them, not by name: every one keeps the
    prefix, so no variable's name changed with the split."""
    groups = ["indexing", "search", "fusion", "history", "answer_cache", "translation", "answers"]
    for name in groups:
        group = Settings.model_fields[name].annotation
        assert group is not None and group.model_config.get("env_prefix") == RAG_PREFIX, name  # type: ignore[union-attr]

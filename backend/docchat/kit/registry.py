"""A port's implementations by name, filled by the composition root (`docchat.main`).

A package that owns a port (the vector store, the embedder, the reranker) declares its registry
next to the protocol; only the wiring registers implementations, and only the wiring asks a
registry for one, by the name the settings give. So adding an implementation is its module,
one `register` line in the wiring, and its entry in the port's contract tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, port: str, setting: str) -> None:
        self.port = port  # "vector store", for messages
        self.setting = setting  # the variable that picks one, for messages
        self._entries: dict[str, T] = {}

    def register(self, name: str, entry: T) -> None:
        if name in self._entries:
            raise ValueError(f"a {self.port} named {name!r} is registered already")
        self._entries[name] = entry

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise LookupError(
                f"No {self.port} named {name!r} ({self.setting}); this installation has: {known}"
            ) from None

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __iter__(self) -> Iterator[tuple[str, T]]:
        return iter(sorted(self._entries.items()))

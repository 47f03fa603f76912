"""A kind of source that is no real one, for tests of what a kind declares: its address is
called neither `url` nor `endpoint_url`. Registered for a test only (`monkeypatch.setitem` on
`SOURCES._entries`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

from docchat.sources.port import Connector, Setting, SettingType, Source, SourceItem


class _Nothing:
    async def items(self) -> AsyncIterator[SourceItem]:
        return
        yield

    def open(self, item: SourceItem) -> object:
        raise NotImplementedError


def _make(settings: Mapping[str, str]) -> Source:
    return _Nothing()  # type: ignore[return-value]


# A kind whose address is called neither `url` nor `endpoint_url`.
FAKE = Connector(
    _make,
    "A wiki",
    (
        Setting("server", "Server", type=SettingType.url, required=True, address=True),
        Setting("space", "Space", target=True),
        Setting("pages", "At most pages", type=SettingType.number),
        Setting("label", "Label"),
        Setting("token", "Token", secret=True),
    ),
)

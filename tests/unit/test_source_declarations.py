"""What a kind of source declares (`Connector`, `sources.port`) is what the API checks: every
address it declares is refused on a private network whatever the setting is called, and a
source's settings are validated against the declaration, with a 422 naming the setting."""

from __future__ import annotations

import pytest

import docchat.main.components  # noqa: F401  (registers the implementations)
from docchat.config import Settings
from docchat.kit.errors import BadRequest, Unprocessable
from docchat.sources.addresses import check_addresses
from docchat.sources.declared import checked_settings, retargeted
from docchat.sources.models import Source as SourceRow
from docchat.sources.port import SOURCES, Connector, SettingType
from tests.support.fake_source import FAKE


@pytest.fixture
def fake_kind(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(SOURCES._entries, "wiki", FAKE)
    return "wiki"


async def test_an_address_is_checked_whatever_its_setting_is_called(fake_kind: str) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    row = SourceRow(kind=fake_kind, settings={"server": "http://10.1.2.3:8080/"})
    with pytest.raises(BadRequest, match="URL_FETCH_ALLOWED_HOSTS"):
        await check_addresses(row, settings.url_fetch)
    # A setting that is no address is not taken for one, even when it looks like one.
    row = SourceRow(kind=fake_kind, settings={"label": "http://10.1.2.3/"})
    await check_addresses(row, settings.url_fetch)


@pytest.mark.parametrize(
    ("settings", "secrets", "named"),
    [
        ({}, None, "'server'"),  # required
        ({"server": "  "}, None, "'server'"),  # blank is not given
        ({"server": "http://wiki.example.com", "path": "/"}, None, "'path'"),  # undeclared
        ({"server": "http://wiki.example.com", "token": "t"}, None, "'token'"),  # a secret
        ({"server": "http://wiki.example.com"}, {"space": "x"}, "'space'"),  # no secret
        ({"server": "wiki.example.com"}, None, "'server'"),  # not an http(s) address
        ({"server": "http://wiki.example.com", "pages": "ten"}, None, "'pages'"),
        ({"server": "http://wiki.example.com", "pages": "0"}, None, "'pages'"),
    ],
)
def test_settings_are_checked_against_the_declaration(
    fake_kind: str, settings: dict[str, str], secrets: dict[str, str] | None, named: str
) -> None:
    with pytest.raises(Unprocessable, match=named):
        checked_settings(fake_kind, settings, secrets)


def test_settings_are_kept_trimmed_without_empty_ones(fake_kind: str) -> None:
    given = {"server": " https://wiki.example.com ", "label": "", "pages": "12"}
    assert checked_settings(fake_kind, given, {"token": "t"}) == (
        {"server": "https://wiki.example.com", "pages": "12"},
        {"token": "t"},
    )


def test_an_unknown_kind_is_refused_with_the_kinds_there_are() -> None:
    with pytest.raises(Unprocessable, match="folder, git, s3, website"):
        checked_settings("ftp", {}, None)


def test_moving_a_source_is_a_change_of_an_address_or_a_target(fake_kind: str) -> None:
    before = {"server": "https://a.example.com", "space": "HR", "label": "x"}
    assert not retargeted(fake_kind, before, {**before, "label": "y"})
    assert retargeted(fake_kind, before, {**before, "space": "IT"})
    assert retargeted(fake_kind, before, {**before, "server": "https://b.example.com"})


@pytest.mark.parametrize(("kind", "connector"), list(SOURCES))
def test_every_kind_declares_addresses_as_urls_and_no_secret_as_one(
    kind: str, connector: Connector
) -> None:
    assert len(kind) <= 16, "a source's kind is kept in 16 characters (sources.kind)"
    names = [setting.name for setting in connector.settings]
    assert len(names) == len(set(names)), f"{kind} declares a setting twice"
    for setting in connector.settings:
        assert not setting.address or setting.type == SettingType.url, setting.name
        assert not (setting.secret and (setting.address or setting.target)), setting.name

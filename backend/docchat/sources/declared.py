"""A source's settings checked against what its kind declares (`Connector.settings`): the one
place the API's rules for a kind come from, whatever the kind."""

from __future__ import annotations

from collections.abc import Mapping

from docchat.kit.errors import Unprocessable
from docchat.sources.port import SOURCES, Connector, Setting, SettingType


def connector_of(kind: str) -> Connector:
    """The kind's connector; a 422 naming the kinds this installation has for any other."""
    try:
        return SOURCES.get(kind)
    except LookupError as exc:
        raise Unprocessable(
            f"There is no {kind!r} kind of source; this installation has: "
            + ", ".join(SOURCES.names())
        ) from exc


def _value_error(kind: str, setting: Setting, value: str) -> str | None:
    if setting.type == SettingType.number and not (value.isdigit() and int(value) >= 1):
        return f"The setting {setting.name!r} of a {kind} source is a whole number from 1"
    if setting.type == SettingType.url and not value.lower().startswith(("http://", "https://")):
        return f"The setting {setting.name!r} of a {kind} source is an http(s) address"
    return None


def checked_settings(
    kind: str, settings: Mapping[str, str], secrets: Mapping[str, str] | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The settings and credentials as the source keeps them (trimmed, empty ones dropped),
    or a 422 naming the first one its kind does not declare, lacks, or cannot take."""
    declared = {setting.name: setting for setting in connector_of(kind).settings}
    secrets = secrets or {}
    for given, secret in ((settings, False), (secrets, True)):
        unknown = sorted(
            name for name in given if getattr(declared.get(name), "secret", None) != secret
        )
        if unknown:
            what = "secret" if secret else "setting"
            raise Unprocessable(f"A {kind} source has no {what} {unknown[0]!r}")
    cleaned = {name: value.strip() for name, value in settings.items() if value.strip()}
    for name, setting in declared.items():
        if setting.required and name not in cleaned:
            raise Unprocessable(f"A {kind} source needs the setting {name!r}")
        problem = _value_error(kind, setting, cleaned[name]) if name in cleaned else None
        if problem:
            raise Unprocessable(problem)
    return cleaned, {name: value for name, value in secrets.items() if value}


def retargeted(kind: str, before: Mapping[str, str], after: Mapping[str, str]) -> bool:
    """Whether a change moves the source elsewhere (its credentials were given for where it
    read from)."""
    return any(
        before.get(setting.name) != after.get(setting.name)
        for setting in connector_of(kind).settings
        if setting.locates
    )

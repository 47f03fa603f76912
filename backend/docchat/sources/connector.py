"""A source's connector, assembled from the source's settings, its credentials unsealed and
the installation's limits; and the cache a connector may keep between syncs."""

from __future__ import annotations

import shutil
from pathlib import Path

from docchat.config import Settings
from docchat.kit.secretbox import SecretUnreadable, unseal
from docchat.sources.models import Source as SourceRow
from docchat.sources.port import SOURCES, Source, SourceError


def connector_settings(row: SourceRow, settings: Settings) -> dict[str, str]:
    """What a kind's factory is made from: the source's settings, its credentials unsealed,
    and the installation's limits (the folder roots)."""
    values = dict(row.settings)
    if row.secrets:
        secret_key = settings.auth.secret_key
        assert secret_key is not None, "the signing key is set when the app starts"
        values |= unseal(row.secrets, secret_key.get_secret_value())
    # The installation's limits, which the kinds apply: folder roots, fetch rules, sizes.
    values["allowed_roots"] = ":".join(str(root) for root in settings.sources.folder_roots)
    values["cache_dir"] = str(cache_dir(row, settings))
    values["fetch_allowed_hosts"] = ",".join(settings.url_fetch.allowed_hosts)
    values["fetch_timeout_seconds"] = str(settings.url_fetch.timeout_seconds)
    values["fetch_max_redirects"] = str(settings.url_fetch.max_redirects)
    values["max_bytes"] = str(settings.max_upload_bytes)
    values["max_items"] = str(settings.sources.max_items)
    limits = settings.sources
    values["git_max_bytes"] = str(limits.git_max_bytes)
    values["git_max_objects"] = str(limits.git_max_objects)
    values["git_max_inflated_bytes"] = str(limits.git_max_inflated_bytes)
    values["git_timeout_seconds"] = str(limits.git_timeout_seconds)
    values["sitemap_max_bytes"] = str(limits.sitemap_max_bytes)
    values["sitemap_max_entries"] = str(limits.sitemap_max_entries)
    return values


def cache_dir(row: SourceRow, settings: Settings) -> Path:
    """Where a kind may keep what it fetched between syncs (a Git source's repository)."""
    return settings.data_dir / "sources" / (row.id.hex if row.id else "new")


def forget_cache(row: SourceRow, settings: Settings) -> None:
    shutil.rmtree(cache_dir(row, settings), ignore_errors=True)


def open_connector(row: SourceRow, settings: Settings) -> Source:
    """The connector of a source; `SourceError` when it cannot be made as configured."""
    try:
        return SOURCES.get(row.kind)(connector_settings(row, settings))
    except SecretUnreadable as exc:
        raise SourceError(str(exc)) from exc
    except KeyError as exc:
        raise SourceError(f"its settings lack {exc}") from exc

"""The address check of a source: none of its addresses may be on a network users may not
reach (as URL fetches), checked at creation and before every sync."""

from __future__ import annotations

from docchat.config import UrlFetchSettings
from docchat.documents.fetch import check_reachable_address
from docchat.sources.models import Source as SourceRow
from docchat.sources.port import SOURCES


async def check_addresses(row: SourceRow, url_fetch: UrlFetchSettings) -> None:
    """Refuse (BadRequest) an address of the source on a network users may not reach, as URL
    fetches do: at creation, and before every sync (a name may resolve elsewhere by then).
    The addresses are the settings its kind declares so (`Connector.addresses`)."""
    for name in SOURCES.get(row.kind).addresses:
        address = row.settings.get(name)
        if address:
            await check_reachable_address(address, url_fetch)

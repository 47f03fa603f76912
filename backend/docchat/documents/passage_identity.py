"""`retrieval.passage_identity.DocumentIdentities` over PostgreSQL: what the header of an
answer's passage says of its document (its own date, when it was uploaded, the collections the
asker sees it in), read in one short session of its own per answer, by the documents of the
passages found (never by the scope, which may be a condition over a whole library)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from docchat.documents import identity_repository
from docchat.replicas.routing import Sessions, replica_read
from docchat.retrieval.passage_identity import DocumentIdentity


def _identity(row: Any) -> DocumentIdentity:
    uploaded: dt.datetime | None = row.uploaded_at
    collections = tuple(row.collections or ())
    if row.everyone:
        collections = (*collections, row.everyone)
    return DocumentIdentity(
        document_date=row.document_date,
        uploaded=uploaded.astimezone(dt.UTC).date() if uploaded is not None else None,
        collections=collections,
    )


@dataclass
class StoredIdentities:
    sessionmaker: Sessions  # a question's reads may run on a replica

    @replica_read
    async def identities(
        self, documents: Collection[uuid.UUID], reader: uuid.UUID | None
    ) -> Mapping[uuid.UUID, DocumentIdentity]:
        if not documents:
            return {}
        async with self.sessionmaker() as session:
            rows = await identity_repository.identities_of(session, list(documents), reader)
        return {row.id: _identity(row) for row in rows}

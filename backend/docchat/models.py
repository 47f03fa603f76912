"""Every table, imported in one place so Alembic and the app see the whole metadata."""

from docchat.answers.models import CachedAnswer
from docchat.audit.models import AuditEntry
from docchat.auth.models import ApiKey, RefreshToken
from docchat.categories.models import Category
from docchat.chats.models import Chat, ChatCollection, ChatDocument, Message, MessageDocument
from docchat.db import Base
from docchat.documents.models import Document, IngestionJob
from docchat.events.models import Event
from docchat.identity.models import ExternalIdentity, RedeemedCode
from docchat.membership.models import (
    Collection,
    CollectionDocument,
    CollectionMember,
    Group,
    GroupMember,
)
from docchat.quotas.models import TokenHold
from docchat.retrieval.models import DocumentChunk
from docchat.sources.models import Source, SourceItem
from docchat.users.models import User

__all__ = [
    "ApiKey",
    "AuditEntry",
    "Base",
    "CachedAnswer",
    "Category",
    "Chat",
    "ChatCollection",
    "ChatDocument",
    "Collection",
    "CollectionDocument",
    "CollectionMember",
    "Document",
    "DocumentChunk",
    "Event",
    "ExternalIdentity",
    "Group",
    "GroupMember",
    "IngestionJob",
    "Message",
    "MessageDocument",
    "RedeemedCode",
    "RefreshToken",
    "Source",
    "SourceItem",
    "TokenHold",
    "User",
]

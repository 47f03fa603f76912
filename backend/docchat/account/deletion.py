"""Deleting an account: everything of the person's goes, but what others rely on is decided.

A person may delete their own account. When nothing of theirs is read by anyone else, it goes
at once; when documents of theirs are (shared with everyone, or in a collection with other
members), or they alone own a collection others are in, the request waits for an
administrator, who either hands those documents and collections to another account or deletes
them too. An administrator may also delete any account directly (a colleague who left), with
the same choice.

Deletion removes the account's row, and with it (foreign keys, ON DELETE CASCADE) its documents
and their chunks, chats and messages, API keys, sessions, memberships, categories and links to
directories; the stored files are released once that has committed (a file another document
shares stays), the vectors go with the owner's vector collection, and the audit log keeps its
entries with the person's email and name replaced (`audit.erase_person`). Collections only they
used go with them.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import uuid
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from docchat.account import repository
from docchat.account.schemas import (
    DeletionConfirmation,
    DeletionPlan,
    OthersDocuments,
    ReliedOnCollection,
    ReliedOnDocument,
)
from docchat.audit import service as audit
from docchat.auth import service as auth_service
from docchat.auth.ratelimit import LoginLimiter
from docchat.config import Settings
from docchat.db import utcnow
from docchat.documents import handover
from docchat.documents import repository as documents_repository
from docchat.documents.models import Visibility
from docchat.documents.service import release_file
from docchat.documents.storage import FileStorage
from docchat.events import service as events
from docchat.kit.errors import Conflict, NotFound, Unprocessable
from docchat.kit.routing import after_commit
from docchat.membership.models import (
    Collection,
    CollectionMember,
    CollectionRole,
)
from docchat.retrieval.index import VectorIndex, VectorStoreUnavailable
from docchat.sources.connector import cache_dir
from docchat.users import administration
from docchat.users import repository as users_repository
from docchat.users.models import User
from docchat.users.passwords import NO_PASSWORD

logger = logging.getLogger(__name__)

RELIED_ON_LISTED = 200  # the plan names this many documents; its counts are exact
WRONG_EMAIL = "Type the account's email to confirm the deletion"
WRONG_PASSWORD = "The password is not correct"  # noqa: S105
NEEDS_DECISION = (
    "{documents} document(s) and {collections} collection(s) of this account are read by "
    "others: choose {transfer} (the account that takes them over), or {delete}"
)


class DecisionNeeded(Conflict):
    """Others rely on some of the account and no one said what happens to it."""

    def __init__(self, documents: int, collections: int) -> None:
        self.documents, self.collections = documents, collections
        super().__init__(
            self.advice("others_documents=transfer with transfer_to", "others_documents=delete")
        )

    def advice(self, transfer: str, delete: str) -> str:
        return NEEDS_DECISION.format(
            documents=self.documents, collections=self.collections, transfer=transfer, delete=delete
        )


@dataclass(frozen=True)
class Decision:
    """What an administrator chose for what others rely on (None: nothing was chosen)."""

    others_documents: OthersDocuments | None = None
    transfer_to: uuid.UUID | None = None


@dataclass(frozen=True)
class Places:
    """Where the deleted account's data lives outside PostgreSQL."""

    vector_index: VectorIndex
    storage: FileStorage
    sessionmaker: async_sessionmaker[AsyncSession]
    settings: Settings  # where sources keep what they fetched


async def plan_of(session: AsyncSession, user: User) -> DeletionPlan:
    documents = await repository.relied_on_documents(session, user.id)
    collections = await repository.relied_on_collections(session, user.id)
    return DeletionPlan(
        documents=await repository.count_live_documents(session, user.id),
        chats=await repository.count_live_chats(session, user.id),
        api_keys=await repository.count_live_api_keys(session, user.id),
        collections_owned=await repository.count_solely_owned_collections(session, user.id),
        relied_on_documents=[
            ReliedOnDocument(
                id=document.id,
                filename=document.filename,
                shared_with_everyone=document.visibility == Visibility.shared,
                collections=names,
            )
            for document, names in documents[:RELIED_ON_LISTED]
        ],
        relied_on_collections=[
            ReliedOnCollection(id=collection.id, name=collection.name, members=members)
            for collection, members in collections
        ],
        deletion_requested_at=user.deletion_requested_at,
    )


async def _confirm(
    session: AsyncSession,
    user: User,
    confirmation: DeletionConfirmation,
    address: str,
    limiter: LoginLimiter,
) -> None:
    if confirmation.confirm_email.strip().lower() != user.email.lower():
        raise Unprocessable(WRONG_EMAIL)
    if user.password_hash == NO_PASSWORD:
        return  # a directory or single sign-on checks who this is; the session proves it
    await auth_service.confirm_password(
        session,
        user,
        confirmation.password,
        limiter=limiter,
        address=address,
        purpose="account deletion",
        refusal=WRONG_PASSWORD,
    )


async def _lock(session: AsyncSession, user_id: uuid.UUID) -> User:
    """The account's row, locked until the transaction ends: two deletions (or a deletion and
    a request) of one account take turns, and the second finds it gone.

    Its sources' rows are locked first, the order a sync takes them in (a worker writing a
    file holds its source, then adds a document that names the account): the other order
    would deadlock with it."""
    user = await repository.lock_account(session, user_id)
    if user is None:
        raise NotFound("User not found")
    return user


async def request(
    session: AsyncSession,
    user: User,
    confirmation: DeletionConfirmation,
    places: Places,
    address: str,
    limiter: LoginLimiter,
) -> DeletionPlan | None:
    """The person's own request: None when the account was deleted at once, else the plan
    that waits for an administrator."""
    await _confirm(session, user, confirmation, address, limiter)
    user = await _lock(session, user.id)
    plan = await plan_of(session, user)
    if not plan.relied_on_documents and not plan.relied_on_collections:
        await delete_account(session, user, user, Decision(), places, address)
        return None
    if user.deletion_requested_at is None:
        user.deletion_requested_at = utcnow()
        await audit.record(
            session,
            audit.AuditAction.user_deletion_requested,
            actor=user,
            target=("user", user.id),
            address=address,
            relied_on_documents=len(plan.relied_on_documents),
            relied_on_collections=len(plan.relied_on_collections),
        )
        await session.flush()
    return plan.model_copy(update={"deletion_requested_at": user.deletion_requested_at})


async def cancel_request(session: AsyncSession, user: User, address: str | None) -> None:
    user = await _lock(session, user.id)
    if user.deletion_requested_at is None:
        raise NotFound("There is no deletion request to cancel")
    user.deletion_requested_at = None
    await audit.record(
        session,
        audit.AuditAction.user_deletion_cancelled,
        actor=user,
        target=("user", user.id),
        address=address,
    )
    await session.flush()


async def _heir(session: AsyncSession, user: User, decision: Decision) -> User | None:
    if decision.others_documents != OthersDocuments.transfer:
        return None
    if decision.transfer_to is None:
        raise Unprocessable("Name the account that takes the documents over (transfer_to)")
    if decision.transfer_to == user.id:
        raise Unprocessable("The documents cannot be transferred to the account being deleted")
    heir = await users_repository.get_by_id(session, decision.transfer_to)
    if heir is None or not heir.is_active:
        raise Unprocessable("transfer_to must be an active account")
    return heir


async def _hand_over_collections(
    session: AsyncSession, collections: list[Collection], heir: User, user: User
) -> None:
    """The heir becomes an owner of each collection (a member already, or added as one)."""
    for collection in collections:
        member = await repository.membership_of(session, collection.id, heir.id)
        if member is None:
            member = CollectionMember(collection_id=collection.id, user_id=heir.id)
            repository.add_member(session, member)
        member.role = CollectionRole.owner
        member.accepted_at = member.accepted_at or utcnow()
        member.added_by = None
        if collection.created_by == user.id:
            collection.created_by = heir.id
    await session.flush()


async def _record_deletion(
    session: AsyncSession,
    actor: User | None,
    user: User,
    address: str | None,
    heir: User | None,
    counts: tuple[int, int, int],
) -> None:
    """The audit entry of the deletion itself, naming the person only by `erased_name`."""
    documents, collections, erased = counts
    by_admin = actor is not None and actor.id != user.id
    alias = audit.erased_name(user.id)
    await audit.record(
        session,
        audit.AuditAction.user_deleted,
        actor=actor if by_admin else None,
        actor_email=None if by_admin else (alias if actor is not None else audit.COMMAND_LINE),
        target=("user", user.id),
        address=address if by_admin else None,
        name=alias,
        by="administrator" if by_admin else ("themselves" if actor else "command line"),
        documents_transferred=documents if heir is not None else 0,
        collections_transferred=collections if heir is not None else 0,
        transferred_to=str(heir.id) if heir is not None else None,
        audit_entries_erased=erased,
    )


async def delete_account(
    session: AsyncSession,
    actor: User | None,
    user: User,
    decision: Decision,
    places: Places,
    address: str | None,
) -> None:
    """Delete the account (call with its row locked by `_lock`, or through `delete_by_admin`).

    Refused, with nothing changed, when others rely on some of it and `decision` says nothing,
    when it is the last active administrator, or when the vector store cannot copy what goes
    to an heir. Its vectors and files go once the deletion has committed."""
    documents = [document for document, _ in await repository.relied_on_documents(session, user.id)]
    collections = [
        collection for collection, _ in await repository.relied_on_collections(session, user.id)
    ]
    if (documents or collections) and decision.others_documents is None:
        raise DecisionNeeded(len(documents), len(collections))
    await administration.ensure_another_admin(session, user)
    heir = await _heir(session, user, decision)
    if heir is not None:
        await handover.hand_over(session, places.vector_index, documents, heir.id)
        await _hand_over_collections(session, collections, heir, user)
        await repository.hand_over_sources(session, user.id, heir.id, [c.id for c in collections])
    else:
        for collection in collections:
            collection.deleted_at = utcnow()
    caches = await _forget_sources(session, user.id, places.settings)
    await repository.delete_own_collections(session, user.id)
    await repository.delete_invitations_to(session, user.email)
    keys = await documents_repository.storage_keys_of_owner(session, user.id)
    await events.forget_words_of(session, user.id)
    erased = await audit.erase_person(session, user.id, user.email, user.display_name)
    await _record_deletion(
        session, actor, user, address, heir, (len(documents), len(collections), erased)
    )
    await repository.delete_user(session, user.id)
    session.expunge(user)
    # Once committed (never before: a rollback would leave live documents without vectors).
    after_commit(session, partial(_drop_vectors, places.vector_index, user.id))
    for key in keys:
        after_commit(session, partial(release_file, places.sessionmaker, places.storage, key))
    for folder in caches:
        after_commit(session, partial(asyncio.to_thread, shutil.rmtree, folder, True))


async def _drop_vectors(vector_index: VectorIndex, user_id: uuid.UUID) -> None:
    """The deleted account's vector collection (its documents' rows are gone: nothing can
    find them). If the store cannot, they stay unreachable until `docchat reindex`."""
    try:
        await vector_index.delete_owner(user_id)
    except VectorStoreUnavailable:
        logger.error(
            "the vectors of deleted account %s could not be removed (the vector store was "
            "unavailable); no search reaches them, and `docchat reindex` clears them",
            user_id,
        )


async def _forget_sources(
    session: AsyncSession, user_id: uuid.UUID, settings: Settings
) -> list[Path]:
    """Fence out any sync of the account's sources (they go with the account); the folders
    of what they fetched, to remove once committed."""
    sources = await repository.sources_of(session, user_id)
    for row in sources:
        row.claim_token = None
    await session.flush()
    return [cache_dir(row, settings) for row in sources]


async def delete_by_admin(
    session: AsyncSession,
    admin: User | None,
    user_id: uuid.UUID,
    decision: Decision,
    places: Places,
    address: str | None,
) -> None:
    """An administrator's (or the command line's, `admin` None) deletion of any account."""
    user = await _lock(session, user_id)
    await delete_account(session, admin, user, decision, places, address)


async def plan_for_admin(session: AsyncSession, user_id: uuid.UUID) -> DeletionPlan:
    return await plan_of(session, await administration.get(session, user_id))

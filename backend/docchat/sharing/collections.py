"""Collections: named sets of documents shared with users and groups in roles.

Rules: a viewer reads and asks; an editor also adds documents (only ones they own, so nobody
re-shares what was shared with them) and removes any; an owner also renames, deletes and
manages members, and a collection always keeps an owner. Everything a caller may not see is
a 404. The built-in collection Everyone has all users as viewers and administrators as editors.

Consent: a person added by someone else is invited, and the collection reaches their answers
only once they accept (they may decline, or leave later). Adding by email answers the same
whether or not the address has an account (an invitation to an address without one waits for
the account that signs up with it), so the form tells nobody who uses the installation. A
collection is shared with a group only by an administrator or a member of that group.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from docchat.audit import service as audit
from docchat.db import utcnow
from docchat.documents import repository as documents_repository
from docchat.documents.models import Document, Visibility
from docchat.kit.errors import Conflict, Forbidden, NotFound
from docchat.kit.pagination import PageParams
from docchat.membership.models import (
    EVERYONE_ID,
    ROLE_RANK,
    Collection,
    CollectionMember,
    CollectionRole,
    Group,
)
from docchat.membership.repository import role_in
from docchat.sharing import repository
from docchat.sharing.schemas import (
    CollectionCreate,
    CollectionRead,
    CollectionUpdate,
    InvitationRead,
    MemberAdd,
    MemberRead,
)
from docchat.users import repository as users_repository
from docchat.users.models import User

NOT_FOUND = "Collection not found"
BUILTIN = "Everyone is built in: every user reads it and administrators manage its documents"
LAST_OWNER = "A collection must keep an owner: make someone else owner first"
NOT_IN_GROUP = (
    "You can share only with groups you belong to. Ask an administrator to add you to this "
    "group, or add an administrator (or a member of the group) to this collection as an owner: "
    "they can then share it with the group"
)


async def _record(
    session: AsyncSession,
    action: audit.AuditAction,
    user: User,
    collection: Collection,
    address: str | None,
    **detail: Any,
) -> None:
    await audit.record(
        session,
        action,
        actor=user,
        target=("collection", collection.id),
        address=address,
        collection=collection.name,
        **detail,
    )


async def require_role(
    session: AsyncSession, user: User, collection_id: uuid.UUID, needed: CollectionRole
) -> tuple[Collection, CollectionRole]:
    """The collection and the caller's role, if the role is at least `needed`; a collection the
    caller cannot see is a 404, one where the role is too weak a 403."""
    collection = await repository.get_collection(session, collection_id)
    role = await role_in(session, user, collection_id) if collection else None
    if collection is None or collection.deleted_at is not None or role is None:
        raise NotFound(NOT_FOUND)
    if ROLE_RANK[role] < ROLE_RANK[needed]:
        raise Forbidden(f"This needs the {needed} role in the collection (yours: {role})")
    return collection, role


async def require_readable(
    session: AsyncSession, user: User, collection_ids: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """Every id must be a collection the user may read: one that is not is a 404."""
    wanted = list(dict.fromkeys(collection_ids))
    if not wanted:
        return []
    found = await repository.readable_ids_among(session, user, wanted)
    missing = [str(identifier) for identifier in wanted if identifier not in found]
    if missing:
        raise NotFound(f"Collection not found: {missing[0]}")
    return wanted


async def readable_by_name(session: AsyncSession, user: User, name: str) -> Collection | None:
    """A collection the user may read, by name (case-insensitive) or by id. On a name several
    collections share, the one the user owns wins; with none or several of theirs, a 409 lists
    the candidates by id (a stranger's collection of the same name never stands in silently)."""
    by_id = _as_uuid(name)
    if by_id is not None:
        return await repository.readable_by_id(session, user, by_id)
    candidates = await repository.readable_named(session, user, name)
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    owned = await repository.owned_among(session, user.id, [c.id for c in candidates])
    mine = [candidate for candidate in candidates if candidate.id in owned]
    if len(mine) == 1:
        return mine[0]
    listed = ", ".join(
        f"{candidate.id}{' (yours)' if candidate.id in owned else ''}" for candidate in candidates
    )
    raise Conflict(
        f"Several collections you can read are named {name.strip()!r}: {listed}. "
        "Name the one you mean by its id"
    )


def _as_uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        return None


async def as_read(session: AsyncSession, user: User, collection: Collection) -> CollectionRead:
    role = await role_in(session, user, collection.id)
    assert role is not None
    return CollectionRead(
        id=collection.id,
        name=collection.name,
        description=collection.description,
        builtin=collection.id == EVERYONE_ID,
        role=role,
        document_count=await repository.readable_document_count(session, user, collection.id),
        created_at=collection.created_at,
    )


async def list_readable(
    session: AsyncSession, user: User, page: PageParams
) -> tuple[list[CollectionRead], int]:
    """Everyone first, then the user's collections by name."""
    rows, total = await repository.readable_page(session, user, page)
    return [await as_read(session, user, collection) for collection in rows], total


async def create(
    session: AsyncSession, user: User, data: CollectionCreate, address: str | None
) -> Collection:
    collection = Collection(
        name=data.name.strip(), description=data.description.strip(), created_by=user.id
    )
    await repository.add_collection(session, collection)
    owner = CollectionMember(
        collection_id=collection.id,
        user_id=user.id,
        role=CollectionRole.owner,
        added_by=user.id,
        accepted_at=utcnow(),
    )
    await repository.add_member(session, owner)
    await _record(session, audit.AuditAction.collection_created, user, collection, address)
    return collection


async def update(
    session: AsyncSession, user: User, collection_id: uuid.UUID, data: CollectionUpdate
) -> Collection:
    collection, _ = await require_role(session, user, collection_id, CollectionRole.owner)
    if collection.id == EVERYONE_ID:
        raise Forbidden(BUILTIN)
    if data.name is not None:
        collection.name = data.name.strip()
    if data.description is not None:
        collection.description = data.description.strip()
    await session.flush()
    return collection


async def delete_collection(
    session: AsyncSession, user: User, collection_id: uuid.UUID, address: str | None
) -> None:
    """The collection goes; its documents stay with their owners (and other collections)."""
    collection, _ = await require_role(session, user, collection_id, CollectionRole.owner)
    if collection.id == EVERYONE_ID:
        raise Forbidden(BUILTIN)
    collection.deleted_at = utcnow()
    await session.flush()
    await _record(session, audit.AuditAction.collection_deleted, user, collection, address)


async def documents(
    session: AsyncSession, user: User, collection_id: uuid.UUID, page: PageParams
) -> tuple[Sequence[Document], int]:
    await require_role(session, user, collection_id, CollectionRole.viewer)
    return await repository.documents_page(session, user, collection_id, page)


async def add_document(
    session: AsyncSession,
    user: User,
    collection_id: uuid.UUID,
    document_id: uuid.UUID,
    address: str | None,
) -> None:
    collection, _ = await require_role(session, user, collection_id, CollectionRole.editor)
    document = await documents_repository.get_readable(session, user, document_id)
    if document is None:
        raise NotFound("Document not found")
    if document.owner_id != user.id:
        raise Forbidden("Only documents you own can be added to a collection")
    if collection.id == EVERYONE_ID:
        document.visibility = Visibility.shared
    else:
        await repository.put_document(session, collection.id, document.id, user.id)
    await session.flush()
    await _record(
        session,
        audit.AuditAction.collection_document_added,
        user,
        collection,
        address,
        document_id=str(document.id),
        filename=document.filename,
    )


async def remove_document(
    session: AsyncSession,
    user: User,
    collection_id: uuid.UUID,
    document_id: uuid.UUID,
    address: str | None,
) -> None:
    """Out of the collection from the next question on; the document itself stays."""
    collection, _ = await require_role(session, user, collection_id, CollectionRole.editor)
    if collection.id == EVERYONE_ID:
        document = await repository.shared_document(session, document_id)
        if document is None:
            raise NotFound("That document is not in this collection")
        document.visibility = Visibility.private
        filename: str | None = document.filename
    else:
        filename = await repository.take_document(session, collection.id, document_id)
        if filename is None:
            raise NotFound("That document is not in this collection")
    await session.flush()
    # Named by its file, as when it was added (the id alone told the log's reader nothing).
    await _record(
        session,
        audit.AuditAction.collection_document_removed,
        user,
        collection,
        address,
        document_id=str(document_id),
        filename=filename,
    )


def _member_read(member: CollectionMember, email: str | None, group_name: str | None) -> MemberRead:
    """A member as the collection's members see it. An invitation shows only the address that
    was typed, whether or not it has an account."""
    pending = member.accepted_at is None
    return MemberRead(
        id=member.id,
        role=member.role,
        user_id=None if pending else member.user_id,
        email=member.invited_email or email,
        group_id=member.group_id,
        group_name=group_name,
        pending=pending,
        created_at=member.created_at,
    )


async def members(session: AsyncSession, user: User, collection_id: uuid.UUID) -> list[MemberRead]:
    await require_role(session, user, collection_id, CollectionRole.viewer)
    return [
        _member_read(member, email, group_name)
        for member, email, group_name in await repository.members_of(session, collection_id)
    ]


async def _managed(session: AsyncSession, user: User, collection_id: uuid.UUID) -> Collection:
    collection, _ = await require_role(session, user, collection_id, CollectionRole.owner)
    if collection.id == EVERYONE_ID:
        raise Forbidden(BUILTIN)
    return collection


async def add_member(
    session: AsyncSession,
    user: User,
    collection_id: uuid.UUID,
    data: MemberAdd,
    address: str | None,
) -> MemberRead:
    """Invite a person (by email) or share with a group (by id). The answer is the same for an
    address with an account and one without: an invitation, pending until accepted."""
    collection = await _managed(session, user, collection_id)
    member = CollectionMember(collection_id=collection.id, role=data.role, added_by=user.id)
    group_name: str | None = None
    if data.email is not None:
        who = str(data.email).strip().lower()
        await _invite(session, user, member, who)
    else:
        group = await _shareable_group(session, user, data.group_id)
        member.group_id, group_name = group.id, group.name
        member.accepted_at = utcnow()  # the group's own members need no invitation
        who = f"group {group.name}"
    if await repository.member_exists(session, member, email=who if data.email else None):
        raise Conflict(f"{who} is already a member or invited: change the role instead")
    await repository.add_member(session, member)
    await _record(
        session,
        audit.AuditAction.collection_member_added,
        user,
        collection,
        address,
        member=who,
        role=member.role,
    )
    return _member_read(member, who if data.email is not None else None, group_name)


async def _invite(session: AsyncSession, user: User, member: CollectionMember, email: str) -> None:
    invited = await users_repository.get_by_email(session, email)
    if invited is not None and invited.id == user.id:
        raise Conflict("You are a member of this collection already")
    if invited is None:
        member.invited_email = email
    else:
        member.user_id = invited.id


async def _shareable_group(session: AsyncSession, user: User, group_id: uuid.UUID | None) -> Group:
    """A group the user may share with: any, for an administrator; their own groups else (so
    nobody puts a collection into the answers of a group they are not part of).

    An administrator shares only collections they own too: one who is not in a collection
    cannot see it (404), and could otherwise share anyone's collection with a group of their
    own to read it. The refusal says the two ways that work."""
    group = await repository.get_group(session, group_id)
    if group is None:
        raise NotFound("Group not found")
    if not user.is_admin and not await repository.in_group(session, group.id, user.id):
        raise Forbidden(NOT_IN_GROUP)
    return group


# -- invitations, as the invited person sees them -------------------------------------------


async def invitations(session: AsyncSession, user: User) -> list[InvitationRead]:
    """Collections others added the user to that wait for their answer, newest first."""
    return [
        InvitationRead(
            collection_id=collection.id,
            collection_name=collection.name,
            description=collection.description,
            role=member.role,
            invited_by=invited_by,
            created_at=member.created_at,
        )
        for member, collection, invited_by in await repository.invitations_of(session, user)
    ]


async def _invitation(
    session: AsyncSession, user: User, collection_id: uuid.UUID
) -> tuple[Collection, CollectionMember]:
    collection = await repository.get_collection(session, collection_id)
    member = await repository.invitation_for_update(session, user, collection_id)
    if collection is None or collection.deleted_at is not None or member is None:
        raise NotFound("No invitation to this collection")
    return collection, member


async def accept_invitation(
    session: AsyncSession, user: User, collection_id: uuid.UUID, address: str | None
) -> Collection:
    """From now on the collection is in the user's answers, in the role they were given."""
    collection, member = await _invitation(session, user, collection_id)
    already = await role_in(session, user, collection_id)
    if already is not None and member.user_id != user.id:
        # Invited by address while a member already (say through a group's share).
        await repository.remove_member(session, member)
    else:
        member.user_id, member.invited_email = user.id, None
        member.accepted_at = utcnow()
        await session.flush()
    await _record(
        session,
        audit.AuditAction.collection_invitation_accepted,
        user,
        collection,
        address,
        role=member.role,
    )
    return collection


async def decline_invitation(
    session: AsyncSession, user: User, collection_id: uuid.UUID, address: str | None
) -> None:
    collection, member = await _invitation(session, user, collection_id)
    await repository.remove_member(session, member)
    await _record(
        session, audit.AuditAction.collection_invitation_declined, user, collection, address
    )


async def _member(
    session: AsyncSession, collection: Collection, member_id: uuid.UUID
) -> CollectionMember:
    member = await repository.get_member_for_update(session, member_id)
    if member is None or member.collection_id != collection.id:
        raise NotFound("Member not found")
    return member


async def _named(session: AsyncSession, member: CollectionMember) -> str:
    """Who a member is, as the audit log names them: an address or a group (not an id)."""
    if member.invited_email:
        return member.invited_email
    if member.group_id is not None:
        group = await repository.get_group(session, member.group_id)
        return f"group {group.name}" if group else "a deleted group"
    if member.user_id is not None:
        return await users_repository.email_of(session, member.user_id) or "a deleted account"
    return "unknown"


async def _ensure_another_owner(
    session: AsyncSession, collection: Collection, member: CollectionMember
) -> None:
    if member.role != CollectionRole.owner:
        return
    if await repository.other_owners(session, collection.id, besides=member.id) == 0:
        raise Conflict(LAST_OWNER)


async def change_member(
    session: AsyncSession,
    user: User,
    collection_id: uuid.UUID,
    member_id: uuid.UUID,
    role: CollectionRole,
    address: str | None,
) -> None:
    collection = await _managed(session, user, collection_id)
    member = await _member(session, collection, member_id)
    if role != CollectionRole.owner:
        await _ensure_another_owner(session, collection, member)
    before, member.role = member.role, role
    await session.flush()
    await _record(
        session,
        audit.AuditAction.collection_member_changed,
        user,
        collection,
        address,
        member=await _named(session, member),
        before=before,
        after=role,
    )


async def remove_member(
    session: AsyncSession,
    user: User,
    collection_id: uuid.UUID,
    member_id: uuid.UUID,
    address: str | None,
) -> None:
    """An owner removes anyone; a member may remove themselves (leave)."""
    collection, role = await require_role(session, user, collection_id, CollectionRole.viewer)
    if collection.id == EVERYONE_ID:
        raise Forbidden(BUILTIN)
    member = await _member(session, collection, member_id)
    if role != CollectionRole.owner and member.user_id != user.id:
        raise Forbidden("Only an owner of the collection can remove other members")
    await _ensure_another_owner(session, collection, member)
    who = await _named(session, member)
    await repository.remove_member(session, member)
    await _record(
        session,
        audit.AuditAction.collection_member_removed,
        user,
        collection,
        address,
        member=who,
        role=member.role,
    )

from __future__ import annotations

import uuid

from fastapi import status

from docchat.auth.dependencies import AdminUser, ClientAddress, CurrentUser
from docchat.documents import service as documents_service
from docchat.documents.schemas import DocumentRead
from docchat.kit.pagination import Page, PageDep, page_of
from docchat.kit.routing import SessionDep, make_router
from docchat.membership.models import CollectionRole
from docchat.sharing import collections, groups
from docchat.sharing.schemas import (
    CollectionCreate,
    CollectionRead,
    CollectionUpdate,
    GroupCreate,
    GroupMemberRead,
    GroupRead,
    GroupUpdate,
    InvitationRead,
    MemberAdd,
    MemberRead,
    MemberUpdate,
)

collections_router = make_router(prefix="/collections", tags=["collections"])
groups_router = make_router(prefix="/groups", tags=["groups"])
groups_admin_router = make_router(prefix="/admin/groups", tags=["admin"])


@collections_router.get("", response_model=Page[CollectionRead], operation_id="collections_list")
async def list_collections(
    user: CurrentUser, session: SessionDep, page: PageDep
) -> Page[CollectionRead]:
    """Collections you can read (Everyone first), with your role in each."""
    items, total = await collections.list_readable(session, user, page)
    return page_of(CollectionRead, items, total, page)


@collections_router.get(
    "/invitations",
    response_model=list[InvitationRead],
    operation_id="collections_list_invitations",
)
async def list_invitations(user: CurrentUser, session: SessionDep) -> list[InvitationRead]:
    """Collections others added you to that wait for your answer. None of them is in your
    answers, searches or document lists until you accept it."""
    return await collections.invitations(session, user)


@collections_router.post(
    "/{collection_id}/invitation/accept",
    response_model=CollectionRead,
    operation_id="collections_accept_invitation",
)
async def accept_invitation(
    collection_id: uuid.UUID, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> CollectionRead:
    """Join a collection you were invited to: its documents reach your answers from the next
    question on (leave it any time by removing yourself from its members)."""
    collection = await collections.accept_invitation(session, user, collection_id, address)
    return await collections.as_read(session, user, collection)


@collections_router.delete(
    "/{collection_id}/invitation",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="collections_decline_invitation",
)
async def decline_invitation(
    collection_id: uuid.UUID, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> None:
    """Decline an invitation: nothing of the collection ever reaches you."""
    await collections.decline_invitation(session, user, collection_id, address)


@collections_router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=CollectionRead,
    operation_id="collections_create",
)
async def create_collection(
    data: CollectionCreate, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> CollectionRead:
    """A new collection; you are its owner."""
    collection = await collections.create(session, user, data, address)
    return await collections.as_read(session, user, collection)


@collections_router.get(
    "/{collection_id}", response_model=CollectionRead, operation_id="collections_get"
)
async def get_collection(
    collection_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> CollectionRead:
    collection, _ = await collections.require_role(
        session, user, collection_id, CollectionRole.viewer
    )
    return await collections.as_read(session, user, collection)


@collections_router.patch(
    "/{collection_id}", response_model=CollectionRead, operation_id="collections_update"
)
async def update_collection(
    collection_id: uuid.UUID, data: CollectionUpdate, user: CurrentUser, session: SessionDep
) -> CollectionRead:
    """Rename or describe (owners)."""
    collection = await collections.update(session, user, collection_id, data)
    return await collections.as_read(session, user, collection)


@collections_router.delete(
    "/{collection_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="collections_delete",
)
async def delete_collection(
    collection_id: uuid.UUID, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> None:
    """Delete the collection (owners); its documents stay with their owners."""
    await collections.delete_collection(session, user, collection_id, address)


@collections_router.get(
    "/{collection_id}/documents",
    response_model=Page[DocumentRead],
    operation_id="collections_list_documents",
)
async def list_documents(
    collection_id: uuid.UUID, user: CurrentUser, session: SessionDep, page: PageDep
) -> Page[DocumentRead]:
    items, total = await collections.documents(session, user, collection_id, page)
    reads = await documents_service.as_read(session, items, user.id)
    return page_of(DocumentRead, reads, total, page)


@collections_router.put(
    "/{collection_id}/documents/{document_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="collections_add_document",
)
async def add_document(
    collection_id: uuid.UUID,
    document_id: uuid.UUID,
    user: CurrentUser,
    session: SessionDep,
    address: ClientAddress,
) -> None:
    """Add one of your documents (editors and owners; idempotent)."""
    await collections.add_document(session, user, collection_id, document_id, address)


@collections_router.delete(
    "/{collection_id}/documents/{document_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="collections_remove_document",
)
async def remove_document(
    collection_id: uuid.UUID,
    document_id: uuid.UUID,
    user: CurrentUser,
    session: SessionDep,
    address: ClientAddress,
) -> None:
    """Take a document out (editors and owners): no later answer of members uses it."""
    await collections.remove_document(session, user, collection_id, document_id, address)


@collections_router.get(
    "/{collection_id}/members",
    response_model=list[MemberRead],
    operation_id="collections_list_members",
)
async def list_members(
    collection_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> list[MemberRead]:
    return await collections.members(session, user, collection_id)


@collections_router.post(
    "/{collection_id}/members",
    status_code=status.HTTP_201_CREATED,
    response_model=list[MemberRead],
    operation_id="collections_add_member",
)
async def add_member(
    collection_id: uuid.UUID,
    data: MemberAdd,
    user: CurrentUser,
    session: SessionDep,
    address: ClientAddress,
) -> list[MemberRead]:
    """Invite a person (by email) or share with a group you belong to, as viewer, editor or
    owner (owners). A person sees the invitation and the collection reaches their answers once
    they accept; the answer is the same whether or not the address has an account."""
    await collections.add_member(session, user, collection_id, data, address)
    return await collections.members(session, user, collection_id)


@collections_router.patch(
    "/{collection_id}/members/{member_id}",
    response_model=list[MemberRead],
    operation_id="collections_change_member",
)
async def change_member(
    collection_id: uuid.UUID,
    member_id: uuid.UUID,
    data: MemberUpdate,
    user: CurrentUser,
    session: SessionDep,
    address: ClientAddress,
) -> list[MemberRead]:
    await collections.change_member(session, user, collection_id, member_id, data.role, address)
    return await collections.members(session, user, collection_id)


@collections_router.delete(
    "/{collection_id}/members/{member_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="collections_remove_member",
)
async def remove_member(
    collection_id: uuid.UUID,
    member_id: uuid.UUID,
    user: CurrentUser,
    session: SessionDep,
    address: ClientAddress,
) -> None:
    """Remove a member (owners), or leave (yourself): effective from the next question."""
    await collections.remove_member(session, user, collection_id, member_id, address)


@groups_router.get("", response_model=Page[GroupRead], operation_id="groups_list")
async def list_groups(_: CurrentUser, session: SessionDep, page: PageDep) -> Page[GroupRead]:
    """The installation's groups, to share collections with."""
    items, total = await groups.list_groups(session, page)
    return page_of(GroupRead, items, total, page)


@groups_admin_router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=GroupRead,
    operation_id="admin_create_group",
)
async def create_group(
    data: GroupCreate, admin: AdminUser, session: SessionDep, address: ClientAddress
) -> GroupRead:
    return GroupRead.model_validate(await groups.create(session, admin, data, address))


@groups_admin_router.patch(
    "/{group_id}", response_model=GroupRead, operation_id="admin_update_group"
)
async def update_group(
    group_id: uuid.UUID, data: GroupUpdate, _: AdminUser, session: SessionDep
) -> GroupRead:
    return GroupRead.model_validate(await groups.update(session, group_id, data))


@groups_admin_router.delete(
    "/{group_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="admin_delete_group"
)
async def delete_group(
    group_id: uuid.UUID, admin: AdminUser, session: SessionDep, address: ClientAddress
) -> None:
    """Delete a group: what was shared with it is no longer shared with its members."""
    await groups.delete_group(session, admin, group_id, address)


@groups_admin_router.get(
    "/{group_id}/members",
    response_model=Page[GroupMemberRead],
    operation_id="admin_list_group_members",
)
async def list_group_members(
    group_id: uuid.UUID, _: AdminUser, session: SessionDep, page: PageDep
) -> Page[GroupMemberRead]:
    items, total = await groups.members(session, group_id, page)
    return page_of(GroupMemberRead, items, total, page)


@groups_admin_router.put(
    "/{group_id}/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="admin_add_group_member",
)
async def add_group_member(
    group_id: uuid.UUID,
    user_id: uuid.UUID,
    admin: AdminUser,
    session: SessionDep,
    address: ClientAddress,
) -> None:
    await groups.add_member(session, admin, group_id, user_id, address)


@groups_admin_router.delete(
    "/{group_id}/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="admin_remove_group_member",
)
async def remove_group_member(
    group_id: uuid.UUID,
    user_id: uuid.UUID,
    admin: AdminUser,
    session: SessionDep,
    address: ClientAddress,
) -> None:
    await groups.remove_member(session, admin, group_id, user_id, address)

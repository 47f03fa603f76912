from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal
from urllib.parse import quote

from fastapi import Header, Query, Response, status
from fastapi.responses import StreamingResponse

from docchat.auth.dependencies import ClientAddress, CurrentUser
from docchat.chats import export, feedback, service, shares
from docchat.chats.dependencies import MessageFlowDep, OwnedChat
from docchat.chats.models import Chat
from docchat.chats.progress import silent_after
from docchat.chats.schemas import (
    STREAM_EVENT_SCHEMA,
    AnswerDefaults,
    ChatCreate,
    ChatDetail,
    ChatDocumentsLink,
    ChatRead,
    ChatUpdate,
    FeedbackRead,
    FeedbackWrite,
    LinkedDocument,
    MessageCreate,
    MessageExchange,
    MessageRead,
    SharedChat,
    SharedMessage,
)
from docchat.kit.errors import Unprocessable
from docchat.kit.pagination import Page, PageDep, page_of
from docchat.kit.routing import SessionDep, SettingsDep, make_router
from docchat.llm.catalog import allowed_models, resolve_model
from docchat.users.models import User

chats_router = make_router(prefix="/chats", tags=["chats"])
messages_router = make_router(prefix="/messages", tags=["messages"])
shared_router = make_router(prefix="/shared-chats", tags=["chats"])


async def _detail(session: SessionDep, user: User, chat: Chat) -> ChatDetail:
    return ChatDetail(
        **ChatRead.model_validate(chat).model_dump(),
        document_ids=await service.document_ids(session, chat),
        documents=[
            LinkedDocument.model_validate(document)
            for document in await service.linked_documents(session, user, chat)
        ],
        collection_ids=await service.collection_ids(session, user, chat),
        summary=chat.summary,
        summary_updated_at=chat.summary_updated_at,
    )


@chats_router.post(
    "", status_code=status.HTTP_201_CREATED, response_model=ChatDetail, operation_id="chats_create"
)
async def create_chat(data: ChatCreate, user: CurrentUser, session: SessionDep) -> ChatDetail:
    chat = await service.create(
        session,
        user,
        title=data.title or "New chat",
        category_id=data.category_id,
        document_ids=data.document_ids,
        collection_ids=data.collection_ids,
    )
    return await _detail(session, user, chat)


@chats_router.get("", response_model=Page[ChatRead], operation_id="chats_list")
async def list_chats(
    user: CurrentUser,
    session: SessionDep,
    page: PageDep,
    category_id: Annotated[uuid.UUID | None, Query()] = None,
    q: Annotated[
        str | None,
        Query(
            max_length=200,
            description=(
                "Only chats whose title or messages match: words in any form (ferries finds "
                'ferry), "a phrase", -word to exclude'
            ),
        ),
    ] = None,
    archived: Annotated[
        service.ArchivedFilter | None,
        Query(
            description="exclude: not archived chats; only: archived ones; include: both. "
            "Unset: exclude, or include in a search (`q`)"
        ),
    ] = None,
) -> Page[ChatRead]:
    """The caller's chats, pinned ones first, then the most recently active."""
    items, total = await service.list_owned(
        session, user, page, category_id=category_id, query=q, archived=archived
    )
    listed = page_of(ChatRead, items, total, page)
    if q and q.strip():
        found = await service.snippets(session, [chat.id for chat in listed.items], q.strip())
        for chat in listed.items:
            chat.snippet = found.get(chat.id)
    return listed


@chats_router.get(
    "/answer-settings", response_model=AnswerDefaults, operation_id="chats_answer_defaults"
)
async def answer_defaults(user: CurrentUser, settings: SettingsDep) -> AnswerDefaults:
    """What a chat's answers use unless it sets its own `model` and `strict` (PATCH the chat)."""
    return AnswerDefaults(
        model=resolve_model(settings.llm, user.preferred_model),
        models=allowed_models(settings.llm),
        strict=settings.answers.strict,
        history_pairs=settings.history.max_history_pairs,
        history_pairs_limit=settings.history.history_pairs_limit,
    )


@chats_router.get("/{chat_id}", response_model=ChatDetail, operation_id="chats_get")
async def get_chat(chat: OwnedChat, user: CurrentUser, session: SessionDep) -> ChatDetail:
    return await _detail(session, user, chat)


@chats_router.patch("/{chat_id}", response_model=ChatDetail, operation_id="chats_update")
async def update_chat(
    data: ChatUpdate, chat: OwnedChat, user: CurrentUser, session: SessionDep, settings: SettingsDep
) -> ChatDetail:
    if data.model:
        resolve_model(settings.llm, data.model)  # 400 for a model this server does not offer
    limit = settings.history.history_pairs_limit
    if data.history_pairs is not None and data.history_pairs > limit:
        raise Unprocessable(f"history_pairs: at most {limit} on this server")
    return await _detail(session, user, await service.update(session, user, chat, data))


@chats_router.delete(
    "/{chat_id}", status_code=status.HTTP_204_NO_CONTENT, operation_id="chats_delete"
)
async def delete_chat(
    chat: OwnedChat, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> None:
    await service.delete(session, user, chat, address)


@chats_router.post("/{chat_id}/restore", response_model=ChatDetail, operation_id="chats_restore")
async def restore_chat(
    chat_id: uuid.UUID, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> ChatDetail:
    """Bring back a chat you deleted (within 30 days), with its messages and links: the undo
    of DELETE."""
    return await _detail(session, user, await service.restore(session, user, chat_id, address))


@chats_router.get(
    "/{chat_id}/messages", response_model=Page[MessageRead], operation_id="chats_list_messages"
)
async def list_messages(
    chat: OwnedChat, user: CurrentUser, session: SessionDep, page: PageDep, settings: SettingsDep
) -> Page[MessageRead]:
    """The chat's messages, oldest first, answers with your rating of them. An answer still
    being written has `status` streaming: follow it with GET /messages/{id}/stream. A source
    whose document you may no longer read says so (`readable` false)."""
    silent = silent_after(settings.answer_progress_seconds)
    items, total = await service.list_messages(session, chat, page, silent_seconds=silent)
    listed = page_of(MessageRead, items, total, page)
    ids = [message.id for message in listed.items]
    ratings = await feedback.of_messages(session, ids)
    versions = await service.earlier_versions(session, ids)
    for message in listed.items:
        if message.id in ratings:
            message.feedback = FeedbackRead.model_validate(ratings[message.id])
        message.versions = versions.get(message.id, [])
    await service.mark_unreadable(session, user, listed.items)
    return listed


EXPORT_TYPES = {
    "markdown": ("md", "text/markdown; charset=utf-8"),
    "json": ("json", "application/json"),
}


@chats_router.get(
    "/{chat_id}/export",
    operation_id="chats_export",
    response_class=Response,
    responses={
        status.HTTP_200_OK: {
            "content": {"text/markdown": {}, "application/json": {}},
            "description": "The whole chat as a file (Content-Disposition: attachment)",
        }
    },
)
async def export_chat(
    chat: OwnedChat,
    session: SessionDep,
    format: Annotated[
        Literal["markdown", "json"], Query(description="markdown or json")
    ] = "markdown",
) -> Response:
    """The whole chat, every message with each answer's sources, as Markdown to read or JSON to
    process."""
    messages = await service.all_messages(session, chat)
    extension, media_type = EXPORT_TYPES[format]
    body = (
        export.as_markdown(chat, messages)
        if format == "markdown"
        else export.as_json(chat, messages)
    )
    name = export.file_name(chat, extension)
    disposition = f"attachment; filename*=UTF-8''{quote(name)}"
    return Response(body, media_type=media_type, headers={"Content-Disposition": disposition})


@chats_router.put(
    "/{chat_id}/messages/{message_id}/feedback",
    response_model=FeedbackRead,
    operation_id="chats_rate_answer",
)
async def rate_answer(
    chat: OwnedChat,
    message_id: uuid.UUID,
    data: FeedbackWrite,
    user: CurrentUser,
    session: SessionDep,
) -> FeedbackRead:
    """Rate an answer up or down, with an optional comment; rating again replaces it.
    Administrators see ratings with the question, the answer and its sources."""
    return FeedbackRead.model_validate(await feedback.rate(session, user, chat, message_id, data))


@chats_router.delete(
    "/{chat_id}/messages/{message_id}/feedback",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="chats_withdraw_rating",
)
async def withdraw_rating(chat: OwnedChat, message_id: uuid.UUID, session: SessionDep) -> None:
    await feedback.withdraw(session, chat, message_id)


@chats_router.post(
    "/{chat_id}/documents", response_model=ChatDetail, operation_id="chats_link_documents"
)
async def link_documents(
    data: ChatDocumentsLink, chat: OwnedChat, user: CurrentUser, session: SessionDep
) -> ChatDetail:
    await service.link_documents(session, user, chat, data.document_ids)
    return await _detail(session, user, chat)


@chats_router.delete(
    "/{chat_id}/documents/{document_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="chats_unlink_document",
)
async def unlink_document(chat: OwnedChat, document_id: uuid.UUID, session: SessionDep) -> None:
    await service.unlink_document(session, chat, document_id)


@messages_router.post("", response_model=MessageExchange, operation_id="messages_send")
async def send_message(
    data: MessageCreate, user: CurrentUser, session: SessionDep, flow: MessageFlowDep
) -> MessageExchange:
    """Ask a question; the answer is grounded in documents (message > chat > all readable)."""
    return await flow.send(session, user, data)


STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Server-Sent Events: `meta`, `sources`, `delta`..., then `done` or "
        "`error`; each event's `data` is the schema named after it (StreamMeta, ...), and its "
        "`id` the characters of the answer's text sent so far",
        "content": {"text/event-stream": {"schema": STREAM_EVENT_SCHEMA}},
    }
}


@messages_router.post(
    "/stream",
    response_class=StreamingResponse,
    operation_id="messages_stream",
    responses=STREAM_RESPONSES,
)
async def stream_message(
    data: MessageCreate, user: CurrentUser, session: SessionDep, flow: MessageFlowDep
) -> StreamingResponse:
    """The same as `POST /messages`, as Server-Sent Events: meta, sources, delta…, done | error.

    The answer is written on the server whether or not anyone reads it: closing the stream
    does not stop it (POST /messages/{id}/stop does). Follow it again from where you were with
    GET /messages/{id}/stream."""
    run = flow.launch(await flow.start(session, user, data))
    return StreamingResponse(
        run.progress.follow(0), media_type="text/event-stream", headers=STREAM_HEADERS
    )


@messages_router.get(
    "/{message_id}/stream",
    response_class=StreamingResponse,
    operation_id="messages_follow",
    responses=STREAM_RESPONSES,
)
async def follow_answer(
    message_id: uuid.UUID,
    user: CurrentUser,
    session: SessionDep,
    flow: MessageFlowDep,
    offset: Annotated[
        int, Query(ge=0, description="Characters of the answer's text you already have")
    ] = 0,
    last_event_id: Annotated[
        int | None,
        Header(ge=0, description="The id of the last event you received (sent by EventSource)"),
    ] = None,
) -> StreamingResponse:
    """One of your answers as Server-Sent Events, from where you were: the `meta` and
    `sources` events again, the text after `offset` (or `Last-Event-ID`), then `done` or
    `error`. From any API process, during the answer or after it (then: `meta`, `done`)."""
    start = last_event_id if last_event_id is not None else offset
    events = await flow.follow(session, user, message_id, start)
    return StreamingResponse(events, media_type="text/event-stream", headers=STREAM_HEADERS)


@messages_router.post(
    "/{message_id}/stop",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="messages_stop",
)
async def stop_answer(
    message_id: uuid.UUID, user: CurrentUser, session: SessionDep, flow: MessageFlowDep
) -> None:
    """Stop one of your answers where it is, whichever process writes it; it is kept as far as
    it got, marked stopped (stopped before its first word: only the question stays). Returns
    once it is saved; stopping a finished answer changes nothing."""
    await flow.stop(session, user, message_id)


@chats_router.put(
    "/{chat_id}/collections/{collection_id}",
    response_model=ChatDetail,
    operation_id="chats_link_collection",
)
async def link_collection(
    chat: OwnedChat, collection_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> ChatDetail:
    """Link a collection you can read: its documents (as they are at each question) become
    part of the chat's scope."""
    await service.link_collection(session, user, chat, collection_id)
    return await _detail(session, user, chat)


@chats_router.delete(
    "/{chat_id}/collections/{collection_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    operation_id="chats_unlink_collection",
)
async def unlink_collection(chat: OwnedChat, collection_id: uuid.UUID, session: SessionDep) -> None:
    await service.unlink_collection(session, chat, collection_id)


@chats_router.put("/{chat_id}/share", response_model=ChatDetail, operation_id="chats_share")
async def share_chat(
    chat: OwnedChat, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> ChatDetail:
    """Share the chat read-only by link with the installation's users (`share_id`): the link
    shows the messages so far; call again to bring it up to date (the link stays the same)."""
    return await _detail(session, user, await shares.share(session, user, chat, address))


@chats_router.delete(
    "/{chat_id}/share", status_code=status.HTTP_204_NO_CONTENT, operation_id="chats_unshare"
)
async def unshare_chat(
    chat: OwnedChat, user: CurrentUser, session: SessionDep, address: ClientAddress
) -> None:
    """Turn the chat's link off; sharing again makes a new one."""
    await shares.unshare(session, user, chat, address)


@shared_router.get("/{share_id}", response_model=SharedChat, operation_id="shared_chats_get")
async def get_shared_chat(
    share_id: uuid.UUID, user: CurrentUser, session: SessionDep
) -> SharedChat:
    """A chat someone shared with a link, for any signed-in user who has the link."""
    chat, owner = await shares.get_shared(session, share_id)
    return SharedChat(
        title=chat.title,
        owner_name=owner.display_name or owner.email,
        shared_at=chat.shared_at or chat.updated_at,
        yours=owner.id == user.id,
    )


@shared_router.get(
    "/{share_id}/messages",
    response_model=Page[SharedMessage],
    operation_id="shared_chats_list_messages",
)
async def list_shared_messages(
    share_id: uuid.UUID, user: CurrentUser, session: SessionDep, page: PageDep
) -> Page[SharedMessage]:
    """The shared messages, oldest first; each source only if you may read its document."""
    chat, _ = await shares.get_shared(session, share_id)
    items, total = await shares.shared_messages(session, user, chat, page)
    return Page[SharedMessage](items=items, total=total, skip=page.skip, limit=page.limit)

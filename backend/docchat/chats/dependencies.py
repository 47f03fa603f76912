from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Request

from docchat.auth.dependencies import CurrentUser
from docchat.chats import service
from docchat.chats.flow import MessageFlow
from docchat.chats.models import Chat
from docchat.kit.routing import SessionDep


async def get_owned_chat(chat_id: uuid.UUID, user: CurrentUser, session: SessionDep) -> Chat:
    return await service.get_owned(session, user, chat_id)


OwnedChat = Annotated[Chat, Depends(get_owned_chat)]


def get_message_flow(request: Request) -> MessageFlow:
    flow: MessageFlow = request.app.state.message_flow
    return flow


MessageFlowDep = Annotated[MessageFlow, Depends(get_message_flow)]

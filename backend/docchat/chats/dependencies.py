from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends

from docchat.auth.dependencies import CurrentUser
from docchat.chats import service
from docchat.chats.models import Chat
from docchat.kit.routing import SessionDep


async def get_owned_chat(chat_id: uuid.UUID, user: CurrentUser, session: SessionDep) -> Chat:
    return await service.get_owned(session, user, chat_id)


OwnedChat = Annotated[Chat, Depends(get_owned_chat)]

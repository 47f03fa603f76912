"""App-wide dependencies: each route asks for the one part it uses, never for the whole set.

They all read the `Components` the lifespan built (`app.state.components`), which is also the
one source of settings at run time.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from docchat.answers.engine import AnswerEngine
from docchat.chats.flow import MessageFlow
from docchat.components import Components
from docchat.config import Settings
from docchat.documents.storage import FileStorage
from docchat.events.publisher import EventPublisher
from docchat.openai_compat.service import Completions
from docchat.retrieval.index import VectorIndex


def _components(request: Request) -> Components:
    components: Components = request.app.state.components
    return components


def get_app_settings(request: Request) -> Settings:
    return _components(request).settings


def get_storage(request: Request) -> FileStorage:
    return _components(request).storage


def get_vector_index(request: Request) -> VectorIndex:
    return _components(request).vector_index


def get_publisher(request: Request) -> EventPublisher:
    return _components(request).publisher


def get_engine(request: Request) -> AnswerEngine:
    return _components(request).engine


def get_message_flow(request: Request) -> MessageFlow:
    return _components(request).message_flow


def get_completions(request: Request) -> Completions:
    return _components(request).completions


SettingsDep = Annotated[Settings, Depends(get_app_settings)]
StorageDep = Annotated[FileStorage, Depends(get_storage)]
VectorIndexDep = Annotated[VectorIndex, Depends(get_vector_index)]
PublisherDep = Annotated[EventPublisher, Depends(get_publisher)]
EngineDep = Annotated[AnswerEngine, Depends(get_engine)]
MessageFlowDep = Annotated[MessageFlow, Depends(get_message_flow)]
CompletionsDep = Annotated[Completions, Depends(get_completions)]

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from fastapi.responses import JSONResponse, StreamingResponse

from docchat.auth.dependencies import CurrentUser
from docchat.kit.errors import DocchatError
from docchat.kit.routing import SessionDep, SettingsDep, make_router
from docchat.llm.catalog import allowed_models
from docchat.openai_compat import service
from docchat.openai_compat.dependencies import CompletionsDep
from docchat.openai_compat.schemas import ChatCompletionRequest, ModelCard, ModelList
from docchat.quotas import service as quotas

router = make_router(prefix="/v1", tags=["openai-compatible"])


async def _sse(chunks: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
    try:
        async for chunk in chunks:
            yield f"data: {json.dumps(chunk, default=str)}\n\n"
    except DocchatError as exc:
        error = {"message": exc.message, "type": "upstream_error", "code": exc.status_code}
        yield f"data: {json.dumps({'error': error})}\n\n"
    yield "data: [DONE]\n\n"


async def _held(
    chunks: AsyncGenerator[dict[str, Any], None], hold: quotas.Hold
) -> AsyncIterator[dict[str, Any]]:
    """The chunks of a streamed answer, its quota hold released once it ends either way."""
    try:
        async for chunk in chunks:
            yield chunk
    finally:
        await chunks.aclose()
        await hold.release()


def _streaming(chunks: AsyncIterator[dict[str, Any]]) -> StreamingResponse:
    return StreamingResponse(
        _sse(chunks), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
    )


@router.post("/chat/completions", operation_id="openai_chat_completions", response_model=None)
async def chat_completions(
    request: ChatCompletionRequest,
    user: CurrentUser,
    session: SessionDep,
    completions: CompletionsDep,
    settings: SettingsDep,
) -> JSONResponse | StreamingResponse:
    """OpenAI chat completions. With `index_name` (`all` or a category name) answers come from
    your documents and carry `sources`; without it the request goes to the model as it came,
    within limits (allowed models and fields, one choice, bounded length)."""
    if service.is_passthrough(request):
        payload = service.passthrough_payload(request, settings.llm)
        tokens = service.passthrough_tokens(payload)
    else:
        tokens = completions.answer_tokens(service.split_messages(request.messages)[0])
    hold = await quotas.hold_tokens(
        session, user, settings.quota, tokens=tokens, release_with=completions.sessionmaker
    )
    streaming = False  # a stream releases the hold when it ends
    try:
        if service.is_passthrough(request):
            if request.stream:
                streaming = True
                return _streaming(_held(completions.passthrough_stream(user.id, payload), hold))
            answer = await completions.passthrough(session, user, payload)
            await session.commit()  # its usage counts before its hold goes (in `finally`)
            return JSONResponse(answer)
        prepared = await completions.prepare(session, user, request)
        if request.stream:
            streaming = True
            return _streaming(_held(completions.stream(user.id, prepared), hold))
        return JSONResponse(await completions.complete(user.id, prepared))
    finally:
        if not streaming:
            await hold.release()


@router.get("/models", response_model=ModelList, operation_id="openai_list_models")
async def list_models(_: CurrentUser, settings: SettingsDep) -> ModelList:
    """The models you may ask for: the default first, then those the operator allows."""
    return ModelList(data=[ModelCard(id=name) for name in allowed_models(settings.llm)])

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from docchat.openai_compat.service import Completions


def get_completions(request: Request) -> Completions:
    completions: Completions = request.app.state.completions
    return completions


CompletionsDep = Annotated[Completions, Depends(get_completions)]

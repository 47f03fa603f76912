"""Which models users and API clients may name: the default plus the ones the operator lists.

Every model name a client sends (a message's `options.model`, a user's preferred model, the
`model` of an OpenAI-compatible request) is checked here, so nobody can run the operator's
endpoint on a model the operator did not choose (a far more expensive one, say).
"""

from __future__ import annotations

from docchat.config import LLMSettings
from docchat.kit.errors import BadRequest


def allowed_models(settings: LLMSettings) -> list[str]:
    """The default model first, then the others, without repeats."""
    return list(dict.fromkeys([settings.model, *settings.allowed_models]))


def resolve_model(settings: LLMSettings, requested: str | None) -> str:
    """The model to use for `requested` (the default when None); 400 when it is not allowed."""
    if not requested:
        return settings.model
    allowed = allowed_models(settings)
    if requested not in allowed:
        raise BadRequest(f"Model {requested!r} is not available here; choose one of {allowed}")
    return requested

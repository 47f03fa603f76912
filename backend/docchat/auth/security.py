"""JWTs (python-jose): the only place that signs or reads a token (passwords: `passwords`)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from jose import JWTError, jwt

from docchat.config import AuthSettings

TokenType = Literal["access", "refresh"]


@dataclass(frozen=True)
class TokenClaims:
    user_id: uuid.UUID
    token_type: TokenType
    jti: str
    expires_at: datetime
    # The user's session generation when the token was issued; a raised one voids the token.
    generation: int


def _signing_key(settings: AuthSettings) -> str:
    if settings.secret_key is None:
        raise RuntimeError("no signing key: build the app with auth.signing_key.with_signing_key")
    return settings.secret_key.get_secret_value()


def token_lifetime(token_type: TokenType, settings: AuthSettings) -> timedelta:
    if token_type == "access":  # noqa: S105
        return timedelta(minutes=settings.access_token_minutes)
    return timedelta(days=settings.refresh_token_days)


def create_token(
    user_id: uuid.UUID,
    token_type: TokenType,
    settings: AuthSettings,
    *,
    now: datetime | None = None,
    jti: uuid.UUID | None = None,
    generation: int = 0,
    lifetime: timedelta | None = None,
) -> str:
    issued = now or datetime.now(UTC)
    lifetime = lifetime or token_lifetime(token_type, settings)
    claims = {
        "sub": str(user_id),
        "type": token_type,
        "gen": generation,
        "jti": (jti or uuid.uuid4()).hex,
        "iat": int(issued.timestamp()),
        "exp": int((issued + lifetime).timestamp()),
    }
    return str(jwt.encode(claims, _signing_key(settings), settings.algorithm))


def decode_token(
    token: str, expected_type: TokenType, settings: AuthSettings
) -> TokenClaims | None:
    """The token's claims, or None when it is forged, expired, malformed or of the wrong type."""
    try:
        claims = jwt.decode(
            token,
            _signing_key(settings),
            algorithms=[settings.algorithm],
            options={"require_exp": True, "require_sub": True},
        )
        if claims.get("type") != expected_type:
            return None
        return TokenClaims(
            user_id=uuid.UUID(str(claims["sub"])),
            token_type=expected_type,
            jti=str(claims.get("jti", "")),
            expires_at=datetime.fromtimestamp(int(claims["exp"]), UTC),
            generation=int(claims.get("gen", 0)),
        )
    except (JWTError, ValueError, KeyError, TypeError):
        return None


def sign_payload(
    payload: dict[str, Any], purpose: str, settings: AuthSettings, lifetime: timedelta
) -> str:
    """A short-lived signed value for the browser to hand back (a sign-in's state cookie):
    it cannot be altered, nor passed off as a token of another purpose."""
    now = datetime.now(UTC)
    claims = payload | {
        "type": purpose,
        "iat": int(now.timestamp()),
        "exp": int((now + lifetime).timestamp()),
    }
    return str(jwt.encode(claims, _signing_key(settings), settings.algorithm))


def read_payload(value: str, purpose: str, settings: AuthSettings) -> dict[str, Any] | None:
    """What `sign_payload` signed for `purpose`, or None when altered, expired or another's."""
    try:
        claims: dict[str, Any] = jwt.decode(
            value,
            _signing_key(settings),
            algorithms=[settings.algorithm],
            options={"require_exp": True, "verify_aud": False},
        )
    except (JWTError, ValueError, TypeError):
        return None
    return claims if claims.get("type") == purpose else None

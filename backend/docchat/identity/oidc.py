"""Single sign-on with an OpenID Connect provider: the authorization code flow with PKCE, and
the ID token checked against the provider's published keys, its issuer, docchat's client id,
the login's nonce and its expiry before anything in it is believed.

The provider's metadata (discovery) is read once an hour; its keys when first needed and again
when a token names a key not yet seen (a rotation), at most once a minute.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx
from jose import jwt
from jose.exceptions import ExpiredSignatureError, JWTClaimsError, JWTError

from docchat.config import OidcSettings

logger = logging.getLogger(__name__)

# Public-key signatures only: never "none", never an HMAC keyed with the client secret.
ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"}
)
CLOCK_SKEW_SECONDS = 60
METADATA_SECONDS = 3600
KEYS_REFRESH_SECONDS = 60


class ProviderUnavailable(Exception):
    """The provider could not be reached, or answered what no provider would."""


class SignInRefused(Exception):
    """A sign-in that must not succeed; the message says why, for the person and the log."""


@dataclass(frozen=True)
class Authorization:
    """Where to send the browser, and what its return must match (kept in the browser's
    cookie, never on the server)."""

    url: str
    state: str
    nonce: str
    verifier: str


@dataclass(frozen=True)
class SignedIn:
    """What the provider vouched for, from a checked ID token (and its userinfo)."""

    subject: str
    email: str | None
    email_verified: bool
    name: str
    groups: frozenset[str] = field(default_factory=frozenset)


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def code_challenge(verifier: str) -> str:
    """PKCE S256 (RFC 7636)."""
    return _b64url(hashlib.sha256(verifier.encode()).digest())


class OidcProvider:
    def __init__(self, settings: OidcSettings) -> None:
        self._settings = settings
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._keys: list[dict[str, Any]] = []
        self._keys_at = 0.0

    @property
    def name(self) -> str:
        return self._settings.name

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=self._settings.timeout_seconds)

    async def _get_json(self, url: str, **options: Any) -> dict[str, Any]:
        try:
            async with self._client() as client:
                response = await client.get(url, **options)
            response.raise_for_status()
            payload = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ProviderUnavailable(f"{url}: {type(exc).__name__}") from exc
        if not isinstance(payload, dict):
            raise ProviderUnavailable(f"{url}: not a JSON object")
        return payload

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is None or time.monotonic() - self._metadata_at > METADATA_SECONDS:
            issuer = (self._settings.issuer or "").rstrip("/")
            found = await self._get_json(f"{issuer}/.well-known/openid-configuration")
            if found.get("issuer", "").rstrip("/") != issuer:
                raise ProviderUnavailable("the discovery document names another issuer")
            for needed in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(found.get(needed), str):
                    raise ProviderUnavailable(f"the discovery document has no {needed}")
            self._metadata, self._metadata_at = found, time.monotonic()
        return self._metadata

    async def authorization(self, redirect_uri: str) -> Authorization:
        metadata = await self.metadata()
        state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        verifier = secrets.token_urlsafe(64)
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self._settings.client_id,
                "redirect_uri": redirect_uri,
                "scope": self._settings.scopes,
                "state": state,
                "nonce": nonce,
                "code_challenge": code_challenge(verifier),
                "code_challenge_method": "S256",
            }
        )
        endpoint = metadata["authorization_endpoint"]
        separator = "&" if "?" in endpoint else "?"
        return Authorization(f"{endpoint}{separator}{query}", state, nonce, verifier)

    async def finish(self, code: str, redirect_uri: str, verifier: str, nonce: str) -> SignedIn:
        """Trade the code for tokens, check the ID token, and read who signed in."""
        tokens = await self._exchange(code, redirect_uri, verifier)
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise SignInRefused("the provider returned no ID token")
        access_token = tokens.get("access_token")
        claims = await self.verify_id_token(
            id_token, nonce, access_token if isinstance(access_token, str) else None
        )
        info = await self._userinfo(access_token) if isinstance(access_token, str) else {}
        if info and info.get("sub") != claims["sub"]:
            raise SignInRefused("the provider's userinfo is about someone else")
        return self._signed_in(info | claims)

    async def _exchange(self, code: str, redirect_uri: str, verifier: str) -> dict[str, Any]:
        metadata = await self.metadata()
        secret = self._settings.client_secret
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "client_id": self._settings.client_id,
        }
        # client_secret_basic: the secret in the Authorization header, never in a URL or log.
        auth = (
            httpx.BasicAuth(self._settings.client_id, secret.get_secret_value()) if secret else None
        )
        try:
            async with self._client() as client:
                response = await client.post(
                    metadata["token_endpoint"], data=form, auth=auth or httpx.USE_CLIENT_DEFAULT
                )
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(f"token endpoint: {type(exc).__name__}") from exc
        error = _error_of(response)
        if error in ("invalid_client", "unauthorized_client"):
            logger.error("the OIDC provider refused docchat's client credentials: %s", error)
            raise ProviderUnavailable(f"client refused: {error}")
        if response.status_code in (400, 401):
            # A spent, expired or stolen code, or a verifier that does not match it.
            raise SignInRefused(f"the provider refused the sign-in code ({error})")
        if response.status_code != 200:
            raise ProviderUnavailable(f"token endpoint answered {response.status_code}")
        try:
            payload = response.json()
        except ValueError as exc:
            raise ProviderUnavailable("token endpoint: not JSON") from exc
        return payload if isinstance(payload, dict) else {}

    async def _userinfo(self, access_token: str) -> dict[str, Any]:
        endpoint = (await self.metadata()).get("userinfo_endpoint")
        if not isinstance(endpoint, str):
            return {}
        return await self._get_json(endpoint, headers={"Authorization": f"Bearer {access_token}"})

    async def verify_id_token(
        self, token: str, nonce: str, access_token: str | None = None
    ) -> dict[str, Any]:
        """The token's claims, once its signature (by the provider's published key), issuer,
        audience (docchat's client id), expiry, nonce and access-token hash all check out."""
        try:
            header = jwt.get_unverified_header(token)
        except JWTError as exc:
            raise SignInRefused("the ID token is malformed") from exc
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise SignInRefused(f"the ID token is signed with {algorithm!r}, which is not allowed")
        key = await self._key(header.get("kid"), str(algorithm))
        issuer = (await self.metadata())["issuer"]
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[str(algorithm)],
                audience=self._settings.client_id,
                issuer=issuer,
                access_token=access_token,
                options={
                    "leeway": CLOCK_SKEW_SECONDS,
                    "require_exp": True,
                    "require_iat": True,
                    "require_sub": True,
                    "require_aud": True,
                    "require_iss": True,
                    "verify_at_hash": access_token is not None,
                },
            )
        except ExpiredSignatureError as exc:
            raise SignInRefused("the ID token has expired") from exc
        except JWTClaimsError as exc:
            raise SignInRefused(f"the ID token is not for this server ({exc})") from exc
        except JWTError as exc:
            raise SignInRefused("the ID token's signature does not check out") from exc
        audience = claims.get("aud")
        several = isinstance(audience, list) and len(audience) > 1
        if several and claims.get("azp") != self._settings.client_id:
            raise SignInRefused("the ID token was issued to another client")
        if not hmac.compare_digest(str(claims.get("nonce", "")), nonce):
            raise SignInRefused("the ID token belongs to another sign-in (nonce)")
        return claims

    async def _key(self, kid: Any, algorithm: str) -> dict[str, Any]:
        kty = "EC" if algorithm.startswith("ES") else "RSA"
        for attempt in range(2):
            if attempt or not self._keys:
                if attempt and time.monotonic() - self._keys_at < KEYS_REFRESH_SECONDS:
                    break
                jwks_uri = (await self.metadata())["jwks_uri"]
                keys = (await self._get_json(jwks_uri)).get("keys")
                self._keys = [key for key in keys or [] if isinstance(key, dict)]
                self._keys_at = time.monotonic()
            matching = [
                key
                for key in self._keys
                if key.get("kty") == kty
                and key.get("use", "sig") == "sig"
                and (kid is None or key.get("kid") == kid)
            ]
            if len(matching) == 1 or (matching and kid is not None):
                return matching[0]
        raise SignInRefused("the ID token is signed with a key the provider does not publish")

    def _signed_in(self, claims: dict[str, Any]) -> SignedIn:
        email = claims.get("email")
        groups_claim = self._settings.groups_claim
        groups = claims.get(groups_claim) if groups_claim else None
        names = [str(group).strip()[:100] for group in groups or [] if str(group).strip()]
        name = claims.get("name") or claims.get("preferred_username") or ""
        return SignedIn(
            subject=str(claims["sub"]),
            email=email.strip().lower() if isinstance(email, str) and email.strip() else None,
            email_verified=claims.get("email_verified") is True,
            name=str(name).strip()[:100],
            groups=frozenset(names) if isinstance(groups, list) else frozenset(),
        )


def _error_of(response: httpx.Response) -> str:
    try:
        payload = response.json()
    except ValueError:
        return str(response.status_code)
    return str(payload.get("error", response.status_code)) if isinstance(payload, dict) else ""

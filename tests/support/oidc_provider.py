"""A real OpenID Connect provider on loopback: the npm package oidc-provider (a certified
implementation) run by node from tests/oidc_provider/, with signing keys made here, so that a
test can also mint tokens as the provider would (wrong audience, expired, another nonce) and
forge one with a key of its own."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives.asymmetric import rsa
from jose import jwt

from tests.support.llm_server import free_port
from tests.support.processes import terminate

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "tests" / "oidc_provider"
CLIENT_ID = "docchat-tests"
CLIENT_SECRET = "docchat-tests-client-secret-0123456789"
INSTALL = "npm ci --prefix tests/oidc_provider"


def available() -> bool:
    return (
        shutil.which("node") is not None and (PACKAGE / "node_modules" / "oidc-provider").is_dir()
    )


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def rsa_jwk(kid: str) -> dict[str, str]:
    """A private RSA signing key as a JWK (RFC 7518 parameters)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = key.private_numbers(), key.public_key().public_numbers()
    return {
        "kty": "RSA",
        "kid": kid,
        "use": "sig",
        "alg": "RS256",
        "n": _b64(public.n),
        "e": _b64(public.e),
        "d": _b64(private.d),
        "p": _b64(private.p),
        "q": _b64(private.q),
        "dp": _b64(private.dmp1),
        "dq": _b64(private.dmq1),
        "qi": _b64(private.iqmp),
    }


@dataclass
class OidcServer:
    issuer: str
    key: dict[str, str]
    accounts_file: Path
    process: subprocess.Popen[bytes]
    log: Path

    def set_account(self, subject: str, **claims: Any) -> None:
        """Who may sign in as `subject` (the login name on the provider's page), and the
        claims it vouches for; read again at each sign-in."""
        accounts = json.loads(self.accounts_file.read_text())
        accounts[subject] = claims
        self.accounts_file.write_text(json.dumps(accounts))

    def sign(self, claims: dict[str, Any], key: dict[str, str] | None = None) -> str:
        """An ID token with these claims, signed with the provider's key (or `key`)."""
        signing = key or self.key
        return str(jwt.encode(claims, signing, algorithm="RS256", headers={"kid": signing["kid"]}))

    def id_claims(self, nonce: str, **changes: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": "someone",
            "nonce": nonce,
            "iat": now,
            "exp": now + 300,
        }
        return claims | changes

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        terminate(self.process)


@contextmanager
def running_provider(
    folder: Path, redirect_uris: list[str], port: int | None = None
) -> Iterator[OidcServer]:
    port = port or free_port()
    issuer = f"http://127.0.0.1:{port}"
    key = rsa_jwk(f"test-{uuid.uuid4().hex[:8]}")
    accounts = folder / "accounts.json"
    accounts.write_text("{}")
    config = folder / "provider.json"
    config.write_text(
        json.dumps(
            {
                "port": port,
                "issuer": issuer,
                "accounts": str(accounts),
                "jwks": {"keys": [key]},
                "clients": [
                    {
                        "client_id": CLIENT_ID,
                        "client_secret": CLIENT_SECRET,
                        "redirect_uris": redirect_uris,
                        "grant_types": ["authorization_code"],
                        "response_types": ["code"],
                        "token_endpoint_auth_method": "client_secret_basic",
                    }
                ],
            }
        )
    )
    log = folder / "provider.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603
            [shutil.which("node") or "node", str(PACKAGE / "server.mjs"), str(config)],
            stdout=out,
            stderr=out,
            cwd=PACKAGE,
        )
    server = OidcServer(issuer, key, accounts, process, log)
    try:
        _wait(server)
        yield server
    finally:
        server.stop()


def _wait(server: OidcServer, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    discovery = f"{server.issuer}/.well-known/openid-configuration"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"the OIDC provider exited:\n{server.output()}")
        try:
            if httpx.get(discovery, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"the OIDC provider did not start:\n{server.output()}")

"""Secrets kept in the database (a source's access keys), encrypted with the installation's
signing key: Fernet (AES-128-CBC with HMAC-SHA256, from `cryptography`), its key derived from
the signing key with HKDF for this one purpose. A database dump alone does not reveal them;
with the signing key changed they can no longer be read, and their owner enters them again."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PURPOSE = b"docchat: secrets stored in the database"


class SecretUnreadable(Exception):
    """Sealed with another key (the signing key changed), or damaged."""


def _fernet(signing_key: str) -> Fernet:
    derived = HKDF(algorithm=SHA256(), length=32, salt=None, info=PURPOSE).derive(
        signing_key.encode()
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def seal(values: Mapping[str, str], signing_key: str) -> str:
    return _fernet(signing_key).encrypt(json.dumps(dict(values)).encode()).decode()


def unseal(token: str, signing_key: str) -> dict[str, str]:
    try:
        values = json.loads(_fernet(signing_key).decrypt(token.encode()))
    except (InvalidToken, ValueError) as exc:
        raise SecretUnreadable(
            "its credentials cannot be read (the installation's signing key changed): "
            "enter them again"
        ) from exc
    return {str(name): str(value) for name, value in values.items()}

"""The one rule for an e-mail address new to docchat, wherever it comes in: sign-up, an
account an administrator makes (the API, `docchat users create`, `docchat create-admin`,
`ADMIN_EMAIL`), an invitation to a collection.

A well-formed address (email-validator's syntax, no mail-server lookup) whose domain is not a
reserved name that cannot receive mail (`.test`, `.local`, `.localhost`, `.invalid`, `.onion`,
`.arpa`); kept trimmed and in lower case. Accounts a directory or single sign-on brings in
keep the address their source vouches for.
"""

from __future__ import annotations

from typing import Annotated

from email_validator import EmailNotValidError, validate_email
from pydantic import AfterValidator, WithJsonSchema

RESERVED = "special-use or reserved name"
RESERVED_DOMAIN = (
    "That email address cannot receive email: the part after the @ is a reserved name (such "
    "as .test, .local or .invalid). Use a real address."
)


class InvalidEmail(ValueError):
    """An address the rule refuses; its message says why, in words."""


def checked_email(value: str) -> str:
    """The address as docchat keeps it, or InvalidEmail."""
    try:
        valid = validate_email(value.strip(), check_deliverability=False)
    except EmailNotValidError as exc:
        reason = str(exc)
        if RESERVED in reason:
            raise InvalidEmail(RESERVED_DOMAIN) from None
        raise InvalidEmail(f"That email address is not valid. {reason}") from None
    return valid.normalized.lower()


# A request field holding an address new to docchat (described in OpenAPI as EmailStr was).
EmailAddress = Annotated[
    str, AfterValidator(checked_email), WithJsonSchema({"type": "string", "format": "email"})
]

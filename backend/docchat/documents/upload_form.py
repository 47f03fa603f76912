"""The multipart body of an upload, read only after the caller is known.

FastAPI reads `File`/`Form` parameters before it runs any dependency, so an upload route that
declared them would take in a whole body from a caller with no valid token. Upload routes
declare no body; they authenticate first and then read the form with `upload_form`.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from starlette.datastructures import UploadFile

from docchat.kit.errors import UnsupportedMediaType

MAX_FORM_FIELDS = 8

# The request body as OpenAPI describes it (the route itself declares no body parameters).
UPLOAD_REQUEST_BODY: dict[str, Any] = {
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "required": ["file"],
                "properties": {
                    "file": {
                        "type": "string",
                        "format": "binary",
                        "description": "PDF, Markdown or plain text",
                    },
                    "category_id": {
                        "anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}],
                        "description": "One of your categories",
                    },
                },
            }
        }
    },
}


@dataclass(frozen=True)
class UploadForm:
    file: UploadFile
    category_id: uuid.UUID | None


def _invalid(field: str, message: str, kind: str) -> RequestValidationError:
    return RequestValidationError([{"loc": ("body", field), "msg": message, "type": kind}])


def _category_id(raw: object) -> uuid.UUID | None:
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise _invalid("category_id", "Input should be a valid UUID", "uuid_type")
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise _invalid("category_id", "Input should be a valid UUID", "uuid_parsing") from None


@contextlib.asynccontextmanager
async def upload_form(request: Request) -> AsyncIterator[UploadForm]:
    """The form's `file` and `category_id`; its temporary file is removed when the block ends."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise UnsupportedMediaType("Send the file as multipart/form-data, in a field named `file`")
    async with request.form(max_files=1, max_fields=MAX_FORM_FIELDS) as form:
        file = form.get("file")
        if not isinstance(file, UploadFile):
            raise _invalid("file", "Field required", "missing")
        yield UploadForm(file=file, category_id=_category_id(form.get("category_id")))

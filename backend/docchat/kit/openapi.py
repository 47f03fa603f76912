"""Models the OpenAPI schema should describe though no route returns them as JSON (the data of
Server-Sent Events, say), so the generated client has their types too."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

REF = "#/components/schemas/{model}"


def schema_ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": REF.format(model=model.__name__)}


def publish_models(app: FastAPI, models: Iterable[type[BaseModel]]) -> None:
    """Add `models` (and the models they use) to the app's OpenAPI components."""
    models = list(models)
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = generate()
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in models:
            published = model.model_json_schema(ref_template=REF, mode="serialization")
            for name, definition in published.pop("$defs", {}).items():
                components.setdefault(name, definition)
            components[model.__name__] = published
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

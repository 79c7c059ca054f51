"""The OpenAPI document says what a bad request really gets: 400 with an ErrorBody.

FastAPI documents 422 ("Validation Error") on every operation with parameters or a body, but
Steward answers a request that does not validate, or whose body is not JSON, with 400 and an
:class:`~steward.wire.rest.ErrorBody` (:func:`.errors.add_error_handlers`). A client generated
from the document, and the fuzzing of tests/e2e/bad_input/test_fuzzing.py, must see the truth:
every documented 422 becomes a 400.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

_ERROR = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}


def document_bad_requests(app: FastAPI) -> None:
    """Wrap ``app.openapi`` so its document answers 400 where FastAPI says 422."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = build()
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                responses = operation.get("responses", {})
                if responses.pop("422", None) is not None:
                    responses.setdefault("400", {"description": "Bad request", "content": _ERROR})
        components = schema.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]

"""One request header read from an ASGI scope, before any framework has parsed it (the
middleware, the standby's vouching, the forwarded client address all read them there)."""

from __future__ import annotations

from starlette.types import Scope


def header(scope: Scope, name: str) -> str | None:
    """The first value of header ``name`` (lower case), or None when absent."""
    wanted = name.encode("latin-1")
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for key, value in headers:
        if key == wanted:
            return value.decode("latin-1")
    return None

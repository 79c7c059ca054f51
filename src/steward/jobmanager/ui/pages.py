"""The UI's pages and static files, each answered with a strict Content-Security-Policy.

Every page is a fixed HTML shell that loads one JavaScript module; the module reads the REST API
(with the cookie :mod:`.login` set) and builds the page. Nothing in a shell depends on the
cluster, so the files are read once, at import, and served from memory. The routes stay out of
the OpenAPI document: they are not part of the API.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from steward.jobmanager.rest.errors import ApiError

STATIC: Final = Path(__file__).parent / "static"
PREFIX: Final = "/ui"

CONTENT_SECURITY_POLICY: Final = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
"""Only this JobManager's own files and API: no inline script or style, no other origin."""

SECURITY_HEADERS: Final = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}

_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".txt": "text/plain; charset=utf-8",
}

PAGES: Final = {
    "": "overview.html",
    "jobs": "jobs.html",
    "taskmanagers": "taskmanagers.html",
    "ha": "ha.html",
}
"""``/ui/<name>`` -> its shell in ``static/``; ``/ui/jobs/<id>`` is ``job.html``."""


def _load() -> dict[str, tuple[bytes, str]]:
    """Every file under ``static/`` by its relative path, with its content type. Only these
    are ever served: a request's path is looked up, never joined to a folder."""
    files: dict[str, tuple[bytes, str]] = {}
    for path in sorted(STATIC.rglob("*")):
        kind = _TYPES.get(path.suffix)
        if path.is_file() and kind is not None:
            files[path.relative_to(STATIC).as_posix()] = (path.read_bytes(), kind)
    return files


FILES: Final = _load()

router = APIRouter(include_in_schema=False)


def static_response(name: str, status_code: int = 200) -> Response:
    """The file ``name`` of ``static/`` with the UI's security headers (404 if unknown)."""
    found = FILES.get(name)
    if found is None:
        raise ApiError(404, "not_found", "no such file of the web UI")
    body, kind = found
    return Response(body, status_code=status_code, media_type=kind, headers=SECURITY_HEADERS)


@router.get(PREFIX)
async def root() -> RedirectResponse:
    return RedirectResponse(PREFIX + "/", status_code=303)


@router.get(PREFIX + "/static/{name:path}")
async def static(name: str) -> Response:
    """A stylesheet, script or image of the pages."""
    return static_response(name)


@router.get(PREFIX + "/jobs/{job_id}")
async def job_page(job_id: str) -> Response:
    """A job's page; its script reads the id from the address."""
    return static_response("job.html")


@router.get(PREFIX + "/{page}")
async def page(page: str) -> Response:
    """The overview (``/ui/``), the jobs, the TaskManagers and the HA pages."""
    shell = PAGES.get(page)
    if shell is None:
        raise ApiError(404, "not_found", f"the web UI has no page {page[:60]!r}")
    return static_response(shell)


@router.get(PREFIX + "/")
async def overview() -> Response:
    return static_response(PAGES[""])

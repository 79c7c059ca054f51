"""REST routes of the content store: ``PUT`` and ``HEAD /v1/contents/{sha256}``.

Any JobManager serves them itself, standbys too: a content blob is immutable and verified
against the hash that names it (:mod:`steward.store.contents`), so two JobManagers storing the
same file store the same bytes, and no leader or fencing is needed. The body streams to blob
storage in chunks of :data:`~steward.store.contents.CHUNK` bytes; the size limit
(``jobmanager.upload.max-size``) is enforced as it arrives, closing the connection (413) as
soon as it is exceeded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from steward.errors import BlobStoreError
from steward.security.roles import Action
from steward.store.contents import (
    CHUNK,
    ContentMismatchError,
    ContentStore,
    ContentTooLargeError,
    Upload,
    check_sha256,
)
from steward.wire.jobs import Dependency
from steward.wire.rest import ErrorBody

from .auth import Caller
from .state import Contents

log = logging.getLogger(__name__)

CONTENTS_PATH = "/v1/contents/{sha256}"
_CLOSE = {"Connection": "close"}


router = APIRouter(tags=["contents"])
_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorBody},
    403: {"model": ErrorBody},
    413: {"model": ErrorBody},
    507: {"model": ErrorBody},
}


@router.put(CONTENTS_PATH, status_code=201, responses=_ERRORS)
async def put_content(
    sha256: str, request: Request, caller: Caller, contents: Contents
) -> Response:
    """Store a file a job names, under its SHA-256: 201 stored, 200 already stored.

    A submitter's or an admin's (403 otherwise, before the body is read)."""
    if not caller.may(Action.SUBMIT):
        message = f"{caller.name} (role {caller.role}) may not upload files"
        return _error(403, "forbidden", message, headers=_CLOSE)
    if (refused := _refuse(sha256, request, contents.max_size)) is not None:
        return refused
    if await anyio.to_thread.run_sync(contents.exists, sha256):
        # Read and dropped: answering before the body is read and closing would reset the
        # connection under a client still sending, which then never sees the answer.
        # (Clients ask with HEAD first and do not send what is stored.)
        drained = 0
        async for chunk in request.stream():
            drained += len(chunk)
            if contents.max_size is not None and drained > contents.max_size:
                message = f"content {sha256}: over the upload limit of {contents.max_size}"
                return _error(413, "too_large", message, headers=_CLOSE)
        try:
            await anyio.to_thread.run_sync(contents.touch, sha256)  # its submission follows
        except BlobStoreError as exc:
            return _error(507, "storage_unavailable", str(exc))
        return _stored(sha256, created=False)
    try:
        upload = await anyio.to_thread.run_sync(contents.upload, sha256)
        with upload:
            await _receive(request, upload)
            created = await anyio.to_thread.run_sync(upload.commit)
    except ContentTooLargeError as exc:
        return _error(413, "too_large", str(exc), headers=_CLOSE)
    except ContentMismatchError as exc:
        return _error(400, "content_mismatch", str(exc))
    except BlobStoreError as exc:
        log.warning("content upload failed sha256=%s error=%s", sha256, exc)
        return _error(507, "storage_unavailable", str(exc))
    return _stored(sha256, created=created)


@router.head(CONTENTS_PATH, responses={400: {}, 404: {}, 507: {}})
def head_content(sha256: str, contents: Contents) -> Response:
    """200 (with ``x-steward-size``) if the file is stored, else 404.

    A stored file's age is renewed: the client skips its upload and submits next, so the
    garbage collector must keep it for another retention period."""
    try:
        info = contents.stat(check_sha256(sha256))
        if info is not None:
            contents.touch(sha256)
    except ValueError:
        return Response(status_code=400)
    except BlobStoreError:
        return Response(status_code=507)
    if info is None:
        return Response(status_code=404)
    return Response(status_code=200, headers={"x-steward-size": str(info.size)})


def missing_contents(contents: ContentStore, dependencies: Iterable[Dependency]) -> str | None:
    """None if every dependency is stored with its declared size, else a sentence naming them."""
    problems = []
    for dependency in dependencies:
        info = contents.stat(dependency.sha256)
        if info is None:
            problems.append(f"{dependency.filename} ({dependency.sha256[:12]}) is not stored")
        elif info.size != dependency.size:
            problems.append(
                f"{dependency.filename} ({dependency.sha256[:12]}) is stored with {info.size}"
                f" bytes, not the {dependency.size} the spec declares"
            )
    if not problems:
        return None
    return (
        "the job names files that are not uploaded: "
        + "; ".join(problems[:10])
        + " (upload each with PUT /v1/contents/<sha256> first; nothing was stored)"
    )


async def _receive(request: Request, upload: Upload) -> None:
    """Stream the body into ``upload``, handing the store about a CHUNK at a time."""
    pending: list[bytes] = []
    buffered = 0
    async for chunk in request.stream():
        pending.append(chunk)
        buffered += len(chunk)
        if buffered >= CHUNK:
            await anyio.to_thread.run_sync(upload.write, b"".join(pending))
            pending, buffered = [], 0
    if pending:
        await anyio.to_thread.run_sync(upload.write, b"".join(pending))


def _refuse(sha256: str, request: Request, limit: int | None) -> Response | None:
    try:
        check_sha256(sha256)
    except ValueError as exc:
        return _error(400, "bad_request", str(exc), headers=_CLOSE)
    declared = request.headers.get("content-length", "")
    if limit is not None and declared.isdigit() and int(declared) > limit:
        message = (
            f"content {sha256}: {declared} bytes is over the upload limit of {limit} bytes"
            " (jobmanager.upload.max-size)"
        )
        return _error(413, "too_large", message, headers=_CLOSE)
    return None


def _stored(sha256: str, *, created: bool, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(
        {"sha256": sha256, "created": created},
        status_code=201 if created else 200,
        headers=headers,
    )


def _error(
    status: int, code: str, message: str, *, headers: dict[str, str] | None = None
) -> Response:
    body = ErrorBody(code=code, message=message)
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True), status_code=status, headers=headers
    )

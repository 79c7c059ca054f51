"""Files a submission names by path or URL, fetched by the JobManager: Livy's ``file``,
``pyFiles``, ``files``, ``archives`` and ``jars`` (``POST /batches``).

A submitter could otherwise make a JobManager read anything it can (its own credentials, the
cluster's secrets, another team's objects) and hand it to a job, so a source is read only
under a prefix of ``jobmanager.livy.allowed-sources`` (empty: none, the default): a local
folder (``/data/jobs``, compared after symlinks and ``..`` are resolved, so nothing escapes
it) or a URL prefix (``s3://bucket/jobs/``). Any fsspec URL works whose driver is installed
(``s3://`` with s3fs; ``hdfs://`` needs pyarrow and libhdfs). Every failure, whatever the
driver raised, is one :class:`SourceError` naming the field: the REST API's 400.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import IO

import fsspec

from steward.errors import JobRejectedError
from steward.store.blob import OBJECT_STORE_OPTIONS
from steward.store.contents import CHUNK, ContentStore

_LOCAL_SCHEMES = ("file://", "local:")
"""Livy's ``local:`` means a file on the server's host, as ``file://`` does."""


class SourceError(JobRejectedError):
    """A named source cannot be used; the message names the request's field."""


@dataclass(frozen=True)
class Fetched:
    """A source stored in the content store."""

    filename: str
    sha256: str
    size: int


def allowed_prefixes(setting: str) -> tuple[str, ...]:
    """``jobmanager.livy.allowed-sources`` as prefixes: local folders resolved, URLs as given."""
    found = []
    for raw in (p.strip() for p in setting.split(",")):
        if raw:
            local = _local_path(raw)
            found.append(os.path.join(os.path.realpath(local), "") if local else raw)
    return tuple(found)


def read_bytes(field: str, source: str, allowed: Sequence[str], limit: int) -> tuple[str, bytes]:
    """The source's file name and bytes (at most ``limit``, else a SourceError)."""
    with _opened(field, source, allowed) as (name, stream):
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise SourceError(f"{field}: {source} is larger than {limit} bytes")
    return name, data


def store(
    field: str, source: str, allowed: Sequence[str], contents: ContentStore, limit: int
) -> Fetched:
    """Copy the source into ``contents`` (through a temporary file: never whole in memory)."""
    with tempfile.TemporaryFile() as spool:
        with _opened(field, source, allowed) as (name, stream):
            digest, size = _copy(field, source, stream, spool, limit)
        spool.seek(0)
        contents.put(digest, iter(lambda: spool.read(CHUNK), b""))
    return Fetched(name, digest, size)


def _copy(
    field: str, source: str, stream: IO[bytes], spool: IO[bytes], limit: int
) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(CHUNK):
        size += len(chunk)
        if size > limit:
            raise SourceError(f"{field}: {source} is larger than {limit} bytes")
        digest.update(chunk)
        spool.write(chunk)
    return digest.hexdigest(), size


@contextlib.contextmanager
def _opened(field: str, source: str, allowed: Sequence[str]) -> Iterator[tuple[str, IO[bytes]]]:
    where = _checked(field, source, allowed)
    name = where.rstrip("/").rsplit("/", 1)[-1]
    protocol = where.split("://", 1)[0] if "://" in where else "file"
    # The blob store's timeouts: a stalled object store fails the request, never hangs it.
    options = OBJECT_STORE_OPTIONS.get(protocol, {})
    try:
        with fsspec.open(where, "rb", **options) as stream:
            yield name, stream
    except SourceError:
        raise
    except FileNotFoundError:
        raise SourceError(f"{field}: {source} does not exist") from None
    except IsADirectoryError:
        raise SourceError(f"{field}: {source} is a folder, not a file") from None
    except Exception as exc:  # fsspec's drivers raise anything
        raise SourceError(f"{field}: cannot read {source}: {type(exc).__name__}: {exc}") from None


def _checked(field: str, source: str, allowed: Sequence[str]) -> str:
    """What to open: a local source resolved, a URL as given; refused outside ``allowed``."""
    if not source or "\0" in source:
        raise SourceError(f"{field}: an empty path")
    local = _local_path(source)
    if local is not None:
        if not os.path.isabs(local):
            raise SourceError(f"{field}: {source} is not an absolute path")
        where = os.path.realpath(local)
    elif ".." in source.split("/"):
        raise SourceError(f"{field}: {source} has a '..' segment")
    else:
        where = source
    if not any(where.startswith(prefix) for prefix in allowed):
        raise SourceError(
            f"{field}: {source} is not under a source this cluster allows"
            f" (jobmanager.livy.allowed-sources: {', '.join(allowed) or 'none'})"
        )
    return where


def _local_path(source: str) -> str | None:
    for scheme in _LOCAL_SCHEMES:
        if source.startswith(scheme):
            return source.removeprefix(scheme)
    return None if "://" in source else source

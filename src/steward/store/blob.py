"""The blob store: large payloads (job graphs, checkpoint metadata) in any fsspec filesystem.

``file://`` by default; ``s3://``, ``hdfs://``, ``gs://`` and every other fsspec URL work when
their driver is installed. Two guarantees:

- **Atomic and durable writes.** No reader ever sees half a blob, and a blob that was put
  survives a crash of the machine: on a local filesystem a blob is written to a temporary name,
  synced and renamed, and its folder synced (:mod:`steward.files`); object stores
  publish an object whole and durably by themselves.
- **Private.** On a local filesystem every blob file is mode 0600 (job graphs hold the jobs'
  code and settings); object stores keep their own access control.
- **Checksums.** Every blob starts with a one-line header carrying the payload's length and
  SHA-256, so a truncated or altered blob is detected on read, with or without the pointer that
  names it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import fsspec
from fsspec.implementations.local import LocalFileSystem

from steward import files
from steward.errors import BlobMissingError, BlobStoreError, CorruptStateError

log = logging.getLogger(__name__)

_MAGIC = b"STEWARD-BLOB 1"
_HEADER = re.compile(rb"^STEWARD-BLOB 1 length=(\d+) sha256=([0-9a-f]{64})\n")
_KEY = re.compile(r"[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*")
PRIVATE_FILE_MODE = 0o600
"""On a local filesystem, a blob is readable by the user that wrote it alone."""


@dataclass(frozen=True)
class BlobRef:
    """Where a blob is (its key, relative to the store's root) and its payload's SHA-256."""

    key: str
    sha256: str


@dataclass(frozen=True)
class BlobInfo:
    key: str
    modified: float
    """Seconds since the epoch; used to leave young blobs alone during garbage collection."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _frame(payload: bytes) -> tuple[bytes, str]:
    digest = sha256_hex(payload)
    return b"%s length=%d sha256=%s\n" % (_MAGIC, len(payload), digest.encode()) + payload, digest


def _unframe(key: str, data: bytes) -> tuple[bytes, str]:
    match = _HEADER.match(data)
    if not match:
        raise CorruptStateError(f"blob {key}: missing or damaged header")
    payload = data[match.end() :]
    length, digest = int(match.group(1)), match.group(2).decode()
    if len(payload) != length:
        raise CorruptStateError(f"blob {key}: truncated ({len(payload)} of {length} bytes)")
    if sha256_hex(payload) != digest:
        raise CorruptStateError(f"blob {key}: checksum mismatch")
    return payload, digest


OBJECT_STORE_OPTIONS: dict[str, dict[str, Any]] = {
    # Another process's writes must be seen at once (no listing cache), and a store that stops
    # answering must fail a write in seconds, not minutes (botocore's timeouts, one attempt
    # each; s3fs's own retries below): a leader writes under its lock.
    "s3": {
        "use_listings_cache": False,
        "config_kwargs": {
            "connect_timeout": 3,
            "read_timeout": 5,
            "retries": {"max_attempts": 1, "mode": "standard"},
        },
    },
}
"""fsspec options Steward gives object stores unless the URL's own options say otherwise."""
OBJECT_STORE_RETRIES = {"s3": 2}
"""Attempts of one request by the store's driver itself (s3fs retries timeouts on its own)."""
OPERATION_TIMEOUT = 20.0
"""Seconds one operation on an asynchronous store (s3fs, gcsfs...) may take in all, retries
included: some waits have no timeout of their own (a PutObject waiting for "100 Continue"
from a store that stopped answering hung for minutes)."""


class BlobStore:
    """Blobs under one fsspec URL. Keys are relative paths like ``jobgraphs/<job>/<unique>``.

    ``on_error`` hears the name of each operation the storage failed (``put``, ``get``,
    ``delete``, ``exists``, ``list``): the process's metrics count them for alerting. A
    missing blob is an answer, not a failure of the storage, and is not reported.
    """

    def __init__(
        self, url: str, *, on_error: Callable[[str], None] | None = None, **storage_options: Any
    ) -> None:
        self.url = url.rstrip("/")
        self._on_error = on_error
        protocol = self.url.split("://", 1)[0] if "://" in self.url else "file"
        options = {**OBJECT_STORE_OPTIONS.get(protocol, {}), **storage_options}
        try:
            self._fs, self._root = fsspec.core.url_to_fs(self.url, **options)
        except (ImportError, ValueError) as exc:
            raise BlobStoreError(
                f"cannot open blob storage {url!r}: {exc} (is its fsspec driver installed?"
                " s3:// needs `pip install steward[s3]`)"
            ) from exc
        if protocol in OBJECT_STORE_RETRIES and hasattr(self._fs, "retries"):
            self._fs.retries = OBJECT_STORE_RETRIES[protocol]
        self._local = isinstance(self._fs, LocalFileSystem)
        self._bounded: dict[str, Any] = (
            {"timeout": OPERATION_TIMEOUT} if getattr(self._fs, "async_impl", False) else {}
        )

    def _path(self, key: str) -> str:
        # fullmatch, not match: "$" also matches before a trailing newline, so "x\n" got
        # through. "." segments are refused like "..": "a/./b" would alias "a/b", and garbage
        # collection compares keys as strings, so an alias could get a referenced blob deleted.
        if not _KEY.fullmatch(key) or {".", ".."} & set(key.split("/")):
            raise ValueError(f"invalid blob key {key!r}")
        return f"{self._root}/{key}"

    @property
    def filesystem(self) -> Any:
        """The fsspec filesystem, for stores that stream (:mod:`steward.store.contents`)."""
        return self._fs

    @property
    def is_local(self) -> bool:
        """True on a local filesystem, where a rename publishes a file atomically."""
        return self._local

    def path(self, key: str) -> str:
        """The filesystem path of ``key`` (checked like every key: no ``..``, no ``.``)."""
        return self._path(key)

    def unique_key(self, prefix: str, suffix: str = "") -> str:
        """A key no other writer will use: blobs are never overwritten, only replaced."""
        # Nanoseconds and 48 random bits: two writers of one prefix would have to meet in
        # both. Short, since a job graph's key is written in its pointer in ZooKeeper.
        return f"{prefix}/{time.time_ns():x}-{secrets.token_hex(6)}{suffix}"

    def put(self, key: str, payload: bytes) -> BlobRef:
        """Write ``payload`` under ``key`` atomically; returns its reference."""
        framed, digest = _frame(payload)
        path = self._path(key)
        try:
            if self._local:  # jobs' code and settings: private, and on the disk once put
                files.write_atomically(path, framed, mode=PRIVATE_FILE_MODE, durable=True)
            else:
                self._fs.pipe_file(path, framed, **self._bounded)
        except OSError as exc:
            raise self._failed(
                "put", f"cannot write blob {key} to {self.url}: {_why(exc)}"
            ) from exc
        return BlobRef(key, digest)

    def get(self, ref: BlobRef | str) -> bytes:
        """Read and verify a blob; with a :class:`BlobRef` also check it is the expected one."""
        key = ref.key if isinstance(ref, BlobRef) else ref
        try:
            data: bytes = self._fs.cat_file(self._path(key), **self._bounded)
        except FileNotFoundError as exc:
            raise self._missing(key) from exc
        except OSError as exc:
            raise self._failed(
                "get", f"cannot read blob {key} from {self.url}: {_why(exc)}"
            ) from exc
        payload, digest = _unframe(key, data)
        if isinstance(ref, BlobRef) and digest != ref.sha256:
            raise CorruptStateError(f"blob {key}: not the blob its pointer names (sha256 differs)")
        return payload

    def _missing(self, key: str) -> BlobStoreError:
        """A blob not found: missing if the storage's root is there, else the storage is
        unreachable (an unmounted share looks like an empty one, and its blobs are not lost).
        On an object store a prefix exists only while an object is under it, so there the
        root is the bucket: deleting a prefix's last blob must not make the storage look
        unreachable (a job whose graph is gone would wait for ever instead of failing)."""
        root = self._root if self._local else self._root.split("/", 1)[0]
        try:
            reachable = bool(self._fs.exists(root, **self._bounded))
        except OSError as exc:
            return self._failed("get", f"cannot reach blob storage {self.url}: {_why(exc)}")
        if not reachable:
            return self._failed(
                "get", f"cannot read blob {key}: blob storage {self.url} is not there"
            )
        return BlobMissingError(f"blob {key} is missing from {self.url}")

    def _failed(self, operation: str, message: str) -> BlobStoreError:
        """The error of a failed ``operation``, reported to ``on_error`` first."""
        if self._on_error is not None:
            self._on_error(operation)
        return BlobStoreError(message)

    def delete(self, key: str) -> None:
        """Delete a blob; deleting a missing blob is not an error (cleanup is retried).

        On a local disk the folder of a job's blobs (``jobgraphs/<job-id>/``) goes with its
        last blob: folders are names, and a million finished jobs' empty folders would be a
        million inodes that every listing walks (an object store has no folders). A writer
        that meets its folder just removed makes it again (:func:`steward.files.write_atomically`).
        """
        path = self._path(key)
        try:
            self._fs.rm_file(path, **self._bounded)
        except FileNotFoundError:
            pass
        except OSError as exc:
            message = f"cannot delete blob {key} from {self.url}: {_why(exc)}"
            raise self._failed("delete", message) from exc
        if self._local and key.count("/") >= 2:  # a prefix's own folder (jobgraphs/) stays
            with contextlib.suppress(OSError):  # not empty: another blob is in it
                os.rmdir(os.path.dirname(path))

    def exists(self, key: str) -> bool:
        try:
            return bool(self._fs.exists(self._path(key), **self._bounded))
        except OSError as exc:
            raise self._failed(
                "exists", f"cannot reach blob storage {self.url}: {_why(exc)}"
            ) from exc

    def list(self, prefix: str) -> list[BlobInfo]:
        """Every blob under ``prefix`` (recursively), including temporaries of crashed writers."""
        base = self._path(prefix)
        try:
            found: dict[str, dict[str, Any]] = self._fs.find(base, detail=True, **self._bounded)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise self._failed("list", f"cannot list {prefix} in {self.url}: {_why(exc)}") from exc
        infos = []
        root = self._root.rstrip("/") + "/"
        for path, detail in found.items():
            key = path[len(root) :] if path.startswith(root) else path
            infos.append(BlobInfo(key, modified_of(detail)))
        return sorted(infos, key=lambda info: info.key)


def _why(exc: OSError) -> str:
    """What went wrong, in words: a timeout's own text is often empty."""
    if isinstance(exc, TimeoutError) and not str(exc):
        return f"no answer within {OPERATION_TIMEOUT:g} s (the store does not respond)"
    return str(exc)


MODIFIED_FIELDS = ("mtime", "LastModified", "last_modified", "updated")
"""Where fsspec's file systems put a file's modification time (local, S3, GCS, memory)."""


def modified_of(detail: dict[str, Any], fields: tuple[str, ...] = MODIFIED_FIELDS) -> float:
    """A listed file's modification time (epoch seconds), whichever file system listed it;
    now when it tells none (so a file of unknown age is young: never removed by age)."""
    for field in fields:
        value = detail.get(field)
        if isinstance(value, int | float):
            return float(value)
        timestamp = getattr(value, "timestamp", None)
        if callable(timestamp):
            return float(timestamp())
    return time.time()

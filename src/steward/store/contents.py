"""The content store: files a job names (py-files, files, archives, jars), stored once by hash.

Layout under the blob storage's root::

    contents/sha256/<hex>            the file's bytes as they are (the key names the hash)
    contents/uploads/<time>-<random> an upload in progress, renamed into place once verified
    contents/touched/<hex>           object stores only: empty, written when the file was last
                                     asked for or uploaded again (:meth:`ContentStore.touch`)

Invariants:

- **A key holds what it names.** ``contents/sha256/<h>`` only ever holds bytes whose SHA-256
  is ``h``: an upload goes to a temporary key, is hashed as it streams in, and is published
  (renamed) only if the hash matches; a mismatch deletes it. Two uploads of the same file may
  race: both publish the same bytes, so either wins.
- **Verified on the way out too.** :meth:`ContentStore.copy_to` hashes while it streams and
  raises :class:`CorruptStateError` on a mismatch, so storage damage never reaches a job.
- **Never whole in memory.** Everything moves in chunks of :data:`CHUNK` bytes; the same
  300 MB environment archive used by 100 jobs is one blob.

fsspec and OS errors are mapped here, once, to :class:`BlobStoreError`; an upload's own
faults are :class:`ContentMismatchError` and :class:`ContentTooLargeError`
(:class:`JobRejectedError`\\ s: the caller sent the wrong bytes, nothing was stored).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from steward import files
from steward.errors import BlobMissingError, BlobStoreError, CorruptStateError, JobRejectedError
from steward.store.blob import MODIFIED_FIELDS, PRIVATE_FILE_MODE, BlobStore, modified_of

log = logging.getLogger(__name__)

PREFIX = "contents/sha256"
UPLOADS = "contents/uploads"
TOUCHED = "contents/touched"
CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ContentMismatchError(JobRejectedError):
    """The uploaded bytes do not hash to the SHA-256 they were sent under; nothing stored."""


class ContentTooLargeError(JobRejectedError):
    """The upload is larger than the store's limit; nothing stored."""


@dataclass(frozen=True)
class ContentInfo:
    """A stored content blob: its hash, size and last change (seconds since the epoch)."""

    sha256: str
    size: int
    modified: float


def check_sha256(sha256: str) -> str:
    """``sha256`` if it is 64 lower-case hex digits; ValueError otherwise."""
    if not _SHA256.fullmatch(sha256):
        raise ValueError(f"{sha256[:80]!r} is not a SHA-256 (64 lower-case hex digits)")
    return sha256


def file_sha256(path: Path) -> tuple[str, int]:
    """The SHA-256 and size of a local file, read in chunks. Raises OSError."""
    with path.open("rb") as source:
        return hashlib.file_digest(source, "sha256").hexdigest(), source.tell()


@contextlib.contextmanager
def _storage(what: str, url: str) -> Iterator[None]:
    """Map the filesystem's errors of ``what`` to BlobStoreError (the one place this happens)."""
    try:
        yield
    except FileNotFoundError as exc:
        raise BlobMissingError(f"{what}: missing from {url}") from exc
    except (OSError, ValueError) as exc:
        raise BlobStoreError(f"{what} in {url}: {exc}") from exc


class ContentStore:
    """Content blobs in a :class:`BlobStore`'s filesystem. ``max_size``: upload limit (bytes).

    Example::

        contents = ContentStore(blobs, max_size=4 << 30)
        with contents.upload(sha) as upload:
            for chunk in chunks:
                upload.write(chunk)
            created = upload.commit()
        contents.copy_to(sha, Path("/cache/env.tar.gz"))
    """

    def __init__(self, blobs: BlobStore, max_size: int | None = None) -> None:
        self.blobs = blobs
        self.max_size = max_size
        self._fs = blobs.filesystem

    def key(self, sha256: str) -> str:
        return f"{PREFIX}/{check_sha256(sha256)}"

    def stat(self, sha256: str) -> ContentInfo | None:
        """The stored blob's size and age, or None if it is not stored."""
        detail = self._info(self.key(sha256), f"content {sha256}")
        if detail is None:
            return None
        return ContentInfo(sha256, int(detail.get("size") or 0), _modified_of(detail))

    def exists(self, sha256: str) -> bool:
        return self.stat(sha256) is not None

    def touch(self, sha256: str) -> None:
        """Renew the stored blob's age: a client asked for it (HEAD) or uploaded it again, and
        its submission may follow; the garbage collector keeps what is younger than its
        retention. A local file's mtime is set; an object cannot be touched in place, so an
        empty marker records the time. A blob that is not stored is left alone."""
        if not self.blobs.is_local:
            with _storage(f"touching content {sha256}", self.blobs.url):
                self._fs.pipe_file(self.blobs.path(self._touched_key(sha256)), b"")
            return
        with contextlib.suppress(FileNotFoundError), _storage(f"touching {sha256}", self.blobs.url):
            os.utime(self.blobs.path(self.key(sha256)))

    def age(self, sha256: str) -> ContentInfo | None:
        """:meth:`stat`, its ``modified`` the later of the blob's change and its last touch."""
        info = self.stat(sha256)
        if info is None or self.blobs.is_local:
            return info
        marker = self._info(self._touched_key(sha256), f"content {sha256}'s last touch")
        if marker is None:
            return info
        return ContentInfo(sha256, info.size, max(info.modified, _modified_of(marker)))

    def upload(self, sha256: str) -> Upload:
        """Start an upload of the blob ``sha256`` (see :class:`Upload`)."""
        key = self.blobs.unique_key(UPLOADS)
        return Upload(self, check_sha256(sha256), key)

    def put(self, sha256: str, chunks: Iterable[bytes]) -> bool:
        """Store ``chunks`` as ``sha256``; True if it was new. Raises what :class:`Upload` does."""
        with self.upload(sha256) as upload:
            for chunk in chunks:
                upload.write(chunk)
            return upload.commit()

    def put_file(self, path: Path) -> tuple[str, bool]:
        """Store a local file (hashed first, then streamed); its SHA-256 and whether it was new."""
        sha256, _size = file_sha256(path)
        with path.open("rb") as source:
            return sha256, self.put(sha256, iter(lambda: source.read(CHUNK), b""))

    @contextlib.contextmanager
    def open(self, sha256: str) -> Iterator[IO[bytes]]:
        """The stored content, to read (seekable; its hash is not verified here: a reader that
        needs every byte right uses :meth:`copy_to`). A missing blob is a BlobStoreError."""
        path = self.blobs.path(self.key(sha256))
        with _storage(f"content {sha256}", self.blobs.url), self._fs.open(path, "rb") as source:
            yield source

    def copy_to(self, sha256: str, destination: Path) -> int:
        """Stream the blob into the local file ``destination``, verifying its hash.

        Returns its size. On a mismatch ``destination`` is deleted and CorruptStateError
        raised; a missing blob is a BlobStoreError.
        """
        try:
            digest, size = self._stream_into(sha256, destination)
        except BaseException:
            destination.unlink(missing_ok=True)
            raise
        if digest != sha256:
            destination.unlink(missing_ok=True)
            raise CorruptStateError(
                f"content {sha256} in {self.blobs.url} is damaged: its bytes hash to {digest}"
            )
        return size

    def _stream_into(self, sha256: str, destination: Path) -> tuple[str, int]:
        digest = hashlib.sha256()
        size = 0
        path = self.blobs.path(self.key(sha256))
        with (
            _storage(f"content {sha256}", self.blobs.url),
            self._fs.open(path, "rb") as source,
            destination.open("wb") as sink,
        ):
            while chunk := source.read(CHUNK):
                digest.update(chunk)
                sink.write(chunk)
                size += len(chunk)
        return digest.hexdigest(), size

    def delete(self, sha256: str) -> None:
        """Delete a blob; a missing one is not an error. Its touch marker goes first, so a
        failed delete never leaves a marker behind (only a blob that the next round takes)."""
        if not self.blobs.is_local:
            self._delete_key(self._touched_key(sha256))
        self._delete_key(self.key(sha256))

    def stored(self) -> list[ContentInfo]:
        """Every stored blob (uploads in progress are not listed here), aged by its last touch."""
        touched = {} if self.blobs.is_local else dict(self._find(TOUCHED))
        infos = []
        for name, detail in self._find(PREFIX):
            if _SHA256.fullmatch(name):
                modified = _modified_of(detail)
                if name in touched:
                    modified = max(modified, _modified_of(touched[name]))
                infos.append(ContentInfo(name, int(detail.get("size") or 0), modified))
        return infos

    def stale_uploads(self, older_than: float) -> list[str]:
        """Keys of uploads last changed before ``older_than`` (left by a crashed upload)."""
        return [
            f"{UPLOADS}/{name}"
            for name, detail in self._find(UPLOADS)
            if _modified_of(detail) < older_than
        ]

    def discard_upload(self, key: str) -> None:
        """Delete an upload :meth:`stale_uploads` named."""
        if not key.startswith(f"{UPLOADS}/"):
            raise ValueError(f"{key!r} is not an upload")
        self._delete_key(key)

    def _info(self, key: str, what: str) -> dict[str, Any] | None:
        """fsspec's detail of ``key``; None if it does not exist."""
        try:
            with _storage(what, self.blobs.url):
                detail: dict[str, Any] = self._fs.info(self.blobs.path(key))
        except BlobStoreError as exc:
            if isinstance(exc.__cause__, FileNotFoundError):
                return None
            raise
        return detail

    def _touched_key(self, sha256: str) -> str:
        return f"{TOUCHED}/{check_sha256(sha256)}"

    def _find(self, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        base = self.blobs.path(prefix)
        try:
            with _storage(f"listing {prefix}", self.blobs.url):
                found: dict[str, dict[str, Any]] = self._fs.find(base, detail=True)
        except BlobStoreError as exc:
            if isinstance(exc.__cause__, FileNotFoundError):
                return []
            raise
        return [(path.rsplit("/", 1)[-1], detail) for path, detail in found.items()]

    def _delete_key(self, key: str) -> None:
        path = self.blobs.path(key)
        with contextlib.suppress(FileNotFoundError), _storage(f"deleting {key}", self.blobs.url):
            self._fs.rm_file(path)

    def _publish(self, temporary: str, sha256: str) -> bool:
        final = self.blobs.path(self.key(sha256))
        with _storage(f"publishing content {sha256}", self.blobs.url):
            if self._fs.exists(final):
                self._fs.rm_file(self.blobs.path(temporary))
                self.touch(sha256)  # uploaded again: its submission follows
                return False
            if not self.blobs.is_local:  # an object store has no folders, publishes durably
                self._fs.mv(self.blobs.path(temporary), final)
                return True
            # On the disk before an accepted job names it (steward.files).
            folder = final.rsplit("/", 1)[0]
            self._fs.makedirs(folder, exist_ok=True)
            files.sync_file(self.blobs.path(temporary))
            self._fs.mv(self.blobs.path(temporary), final)
            files.sync_folder(folder)
        return True

    def _open_temporary(self, key: str) -> IO[bytes]:
        path = self.blobs.path(key)
        with _storage(f"starting upload {key}", self.blobs.url):
            if self.blobs.is_local:
                self._fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            sink: IO[bytes] = self._fs.open(path, "wb")
            if self.blobs.is_local:
                os.chmod(path, PRIVATE_FILE_MODE)  # the user's files: this user's alone
        return sink


class Upload:
    """One streamed upload: :meth:`write` chunks, then :meth:`commit`; a context manager.

    Leaving the ``with`` block without a commit (an error, a client that went away) deletes
    what was written. The size limit is checked as chunks arrive, the hash at commit.
    """

    def __init__(self, store: ContentStore, sha256: str, key: str) -> None:
        self.sha256 = sha256
        self.size = 0
        self._store = store
        self._key = key
        self._digest = hashlib.sha256()
        self._sink: IO[bytes] | None = store._open_temporary(key)
        self._done = False

    def write(self, chunk: bytes) -> None:
        limit = self._store.max_size
        self.size += len(chunk)
        if limit is not None and self.size > limit:
            self.abort()
            raise ContentTooLargeError(
                f"content {self.sha256}: larger than the upload limit of {limit} bytes"
                " (jobmanager.upload.max-size)"
            )
        self._digest.update(chunk)
        assert self._sink is not None, "write after commit or abort"
        with _storage(f"writing upload {self._key}", self._store.blobs.url):
            self._sink.write(chunk)

    def commit(self) -> bool:
        """Verify the hash and publish; True if the blob is new. ContentMismatchError if not."""
        self._close()
        if self._digest.hexdigest() != self.sha256:
            self.abort()
            raise ContentMismatchError(
                f"uploaded bytes hash to {self._digest.hexdigest()}, not {self.sha256};"
                " nothing was stored"
            )
        created = self._store._publish(self._key, self.sha256)
        self._done = True
        log.info("content stored sha256=%s size=%d new=%s", self.sha256, self.size, created)
        return created

    def abort(self) -> None:
        if self._done:
            return
        self._done = True
        with contextlib.suppress(BlobStoreError):
            self._close()
        try:
            self._store._delete_key(self._key)
        except BlobStoreError as exc:  # left for garbage collection (stale_uploads)
            log.warning("upload left behind key=%s error=%s", self._key, exc)

    def _close(self) -> None:
        sink, self._sink = self._sink, None
        if sink is not None:
            with _storage(f"closing upload {self._key}", self._store.blobs.url):
                sink.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _traceback: TracebackType | None,
    ) -> None:
        self.abort()


def _modified_of(detail: dict[str, Any]) -> float:
    return modified_of(detail, (*MODIFIED_FIELDS, "created"))

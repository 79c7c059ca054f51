"""The files a job names, sent to the cluster once per client.

Before a submission names a file (by its SHA-256), the cluster must hold it: the client asks
(``HEAD /v1/contents/<sha256>``) and uploads it only if the answer is no. A client that
submits the same files a thousand times asks once: what the cluster said it holds, or
accepted, is remembered for the client's lifetime. The remembered answer can go stale: the
leader's content collector removes a file no live job names after its retention
(``jobmanager.contents.retention``), and a HEAD renewed its age, which a remembered answer no
longer does. The leader then refuses the submission with ``missing_contents``
(:class:`~steward.client.errors.MissingContentsError`) and has stored nothing; the client
forgets its answers for that job's files, asks and uploads again, and submits once more
(:meth:`steward.client.Client.submit`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import httpx

from steward.client.errors import MissingContentsError
from steward.client.failover import Failover, error_body
from steward.client.job_files import LocalFile
from steward.client.responses import api_error

log = logging.getLogger(__name__)

T = TypeVar("T")


class Uploads:
    """``ensure(file)``: the file stored in the cluster, asked about and sent at most once."""

    def __init__(self, failover: Failover) -> None:
        self._failover = failover
        self._stored: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, local_file: LocalFile) -> bool:
        """Store the file unless the cluster is known, or found, to hold it; True if sent."""
        sha256 = local_file.dependency.sha256
        with self._lock:
            if sha256 in self._stored:
                return False
        sent = self._send(local_file)
        with self._lock:
            self._stored.add(sha256)
        return sent

    def sent_with(
        self,
        files: Sequence[LocalFile],
        send: Callable[[], T],
        upload: Callable[[LocalFile], bool] | None = None,
    ) -> T:
        """``send()`` once ``files`` are in the cluster (each through ``upload``, default
        :meth:`ensure`); if the leader says it lost some since this client asked (the content
        collector took them), upload them again and send once more: nothing was stored the
        first time."""
        ensure = upload or self.ensure
        for local_file in files:
            ensure(local_file)
        try:
            return send()
        except MissingContentsError as exc:
            if not files:
                raise
            log.info("files gone from the cluster, uploading again error=%s", exc)
            self.forget(files)
            for local_file in files:
                ensure(local_file)
            return send()

    def forget(self, files: Iterable[LocalFile]) -> None:
        """Ask about these files again next time (the cluster said it lacks one of them)."""
        with self._lock:
            self._stored.difference_update(f.dependency.sha256 for f in files)

    def _send(self, local_file: LocalFile) -> bool:
        dependency = local_file.dependency
        path = f"/v1/contents/{dependency.sha256}"
        response, _ = self._failover.send("HEAD", path)
        if response.status_code == httpx.codes.OK:
            log.info("file already stored file=%s sha256=%s", local_file.path, dependency.sha256)
            return False
        started = time.monotonic()
        response, _ = self._failover.send("PUT", path, content=local_file.chunks)
        if not response.is_success:
            raise api_error(response, error_body(response), None)
        log.info(
            "file uploaded file=%s bytes=%d seconds=%.2f",
            local_file.path,
            dependency.size,
            time.monotonic() - started,
        )
        return True

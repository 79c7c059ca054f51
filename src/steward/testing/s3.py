"""A real S3-compatible server for tests: moto's standalone server, as a process of its own.

:class:`S3Server` starts ``python -m moto.server`` on a free loopback port, waits until it
answers, makes a bucket, and tells the code under test where it is through AWS's own
variables (:meth:`S3Server.environment`: ``AWS_ENDPOINT_URL`` and dummy credentials), which
botocore, s3fs and every Steward process read. It can be frozen (SIGSTOP: requests go
unanswered, as a store that hangs) and thawed; it keeps its objects in memory, so a restart
would be an empty store.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from steward.testing.ports import free_port
from steward.testing.spawning import spawn_logged
from steward.testing.waiting import wait_until

START_TIMEOUT = 60.0


class S3Server:
    """One moto server and one bucket; ``stop()`` (or the context) ends it."""

    def __init__(self, workdir: Path, bucket: str = "steward") -> None:
        self.port = free_port()
        self.bucket = bucket
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "moto.log"
        argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self._process = spawn_logged(argv, self.log, cwd=workdir)
        try:
            wait_until(self._answers, START_TIMEOUT, message="moto's S3 server answering")
            answer = httpx.put(f"{self.endpoint}/{bucket}", timeout=10)
            answer.raise_for_status()
        except BaseException:
            self.stop()
            raise

    def _answers(self) -> bool:
        if self._process.poll() is not None:
            raise AssertionError(f"moto exited:\n{self.log.read_text()[-2000:]}")
        try:
            return httpx.get(self.endpoint, timeout=2).status_code < 500
        except httpx.HTTPError:
            return False

    def url(self, prefix: str = "ha") -> str:
        """An ``s3://`` URL in the bucket."""
        return f"s3://{self.bucket}/{prefix}"

    def environment(self) -> dict[str, str]:
        """What a process needs to reach this server as S3 (credentials are dummies)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "steward-tests",
            "AWS_SECRET_ACCESS_KEY": "steward-tests",
            "AWS_DEFAULT_REGION": "us-east-1",
        }

    def freeze(self) -> None:
        os.kill(self._process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._process.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(10)

    def __enter__(self) -> S3Server:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

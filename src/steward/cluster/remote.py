"""Reaching the other hosts of a cluster over SSH: ``steward cluster node`` run there.

Every call is one ``ssh`` command (OpenSSH, key-based: ``cluster.ssh.options`` holds
``BatchMode=yes`` by default, so a host that would ask for a password is an error, never a
prompt) running ``<cluster.remote.python> -m steward.cli cluster node ...`` on the host, whose
answer is one JSON document on stdout. Steward must be installed there at the same path as
here (or at ``cluster.remote.python``), and the cluster's workdir is the same path on every
host, as Flink's start-cluster.sh assumes of its install. Files (the cluster's configuration
and credentials) go over the SSH channel's stdin, never on a command line.

An SSH failure (exit 255: unreachable, refused, not authorised) is a
:class:`RemoteHostError` naming the host and what ssh said; so is an error of the command
there, with its one-line message.
"""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from steward.config.settings import ClusterHostSettings
from steward.errors import LocalClusterError

log = logging.getLogger(__name__)

T = TypeVar("T")

_SSH_FAILED = 255
_DEFAULT_TIMEOUT = 60.0


class RemoteHostError(LocalClusterError):
    """A host of the cluster could not be reached, or its command failed."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host


@dataclass(frozen=True)
class Remote:
    """How to run ``steward cluster node`` on another host."""

    ssh: Sequence[str]
    python: str
    workdir: Path

    @classmethod
    def of(cls, settings: ClusterHostSettings, workdir: Path) -> Remote:
        ssh = [*shlex.split(settings.ssh_command), *shlex.split(settings.ssh_options)]
        return cls(ssh, settings.remote_python or sys.executable, workdir.absolute())

    def node(
        self,
        host: str,
        *args: str,
        stdin: bytes | None = None,
        timeout: float = _DEFAULT_TIMEOUT,
    ) -> Any:
        """Run ``steward cluster node ARGS --workdir W --host HOST`` on ``host``; its answer."""
        remote = [
            self.python,
            "-m",
            "steward.cli",
            "cluster",
            "node",
            *args,
            "--workdir",
            str(self.workdir),
            "--host",
            host,
        ]
        argv = [*self.ssh, host, "--", shlex.join(remote)]
        log.debug("ssh host=%s command=%s", host, shlex.join(remote))
        try:
            done = subprocess.run(
                argv,
                input=stdin if stdin is not None else b"",
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise RemoteHostError(host, f"no answer over SSH within {timeout:g}s") from exc
        except OSError as exc:
            raise RemoteHostError(host, f"cannot run {self.ssh[0]!r}: {exc.strerror}") from exc
        stderr = done.stderr.decode(errors="replace").strip()
        if done.returncode == _SSH_FAILED:
            said = stderr.splitlines()[-1] if stderr else "no message"
            raise RemoteHostError(host, f"cannot be reached over SSH ({said})")
        if done.returncode != 0:
            said = _last_error(stderr) or f"exit code {done.returncode}"
            raise RemoteHostError(host, f"`steward cluster node {args[0]}` failed: {said}")
        try:
            return json.loads(done.stdout)
        except ValueError as exc:
            raise RemoteHostError(
                host, f"answered with something that is not JSON: {done.stdout[:200]!r}"
            ) from exc


def on_each(hosts: Iterable[str], work: Callable[[str], T]) -> tuple[dict[str, T], dict[str, str]]:
    """``work(host)`` on every host at once: the answers, and the hosts that failed with why."""
    unique = sorted(set(hosts))
    answers: dict[str, T] = {}
    failures: dict[str, str] = {}
    if not unique:
        return answers, failures
    with ThreadPoolExecutor(max_workers=min(16, len(unique))) as pool:
        futures = {host: pool.submit(work, host) for host in unique}
        for host, future in futures.items():
            try:
                answers[host] = future.result()
            except LocalClusterError as exc:
                failures[host] = str(exc)
    return answers, failures


def _last_error(stderr: str) -> str:
    """The line a ``steward`` command printed for a user error (``error: ...``), else the last."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    return (errors or lines or [""])[-1]

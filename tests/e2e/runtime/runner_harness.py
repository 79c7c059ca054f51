"""Start the Steward runner exactly as a TaskManager does, feed it, and watch what it says.

``RunnerHarness`` starts ``python -m steward.runtime.runner --events-fd N`` in a new session,
in a work directory, with stdout/stderr to ``attempt.log``, writes the launch document, feeds
the dead-man's switch from a thread, and collects events from the pipe in another. Tests wait
on conditions with deadlines (``wait_event``, ``wait_exit``), never on sleeps.

Import as ``from runner_harness import RunnerHarness, launch_document`` (pytest puts this
folder on sys.path for the tests beside it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import psutil

from steward.wire.jobs import JobSpec, ProgramKind
from steward.wire.runner_protocol import (
    BaseEvent,
    CheckpointEvent,
    FailedEvent,
    FinishedEvent,
    LaunchDocument,
    RunMode,
    decode_event,
    is_final,
    runner_command,
)
from support import wait_until

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
SAMPLE = EXAMPLES / "data" / "sample.txt"

# What the runtime's Spark tests run with: small, quiet, no UI port to fight over.
SPARK_TEST_MASTER = "local[2]"
SPARK_TEST_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "1g",
}


def launch_document(
    artifact: Path | str,
    checkpoint_dir: Path | str,
    *,
    job_id: str = "job-1",
    args: list[str] | None = None,
    entrypoint: str = "main",
    attempt: int = 1,
    mode: RunMode = RunMode.MAIN,
    is_recovery: bool = False,
    spark: bool = False,
    deadman_timeout: float = 30.0,
    program: ProgramKind = ProgramKind.AUTO,
    spark_conf: dict[str, str] | None = None,
    **extra: Any,
) -> LaunchDocument:
    """A valid launch document; ``spark=True`` adds the test Spark master and conf, and
    ``spark_conf`` more settings."""
    spec = JobSpec(
        job_id=job_id,
        entrypoint=entrypoint,
        args=args or [],
        spark_conf={**(SPARK_TEST_CONF if spark else {}), **(spark_conf or {})},
        program=program,
    )
    return LaunchDocument(
        job_id=job_id,
        attempt=attempt,
        epoch=1,
        mode=mode,
        is_recovery=is_recovery,
        spec=spec,
        artifact_path=str(artifact),
        checkpoint_dir=str(checkpoint_dir),
        spark_master=SPARK_TEST_MASTER,
        deadman_timeout=deadman_timeout,
        **extra,
    )


class RunnerHarness:
    """One runner process, started like a TaskManager starts it."""

    def __init__(self, workdir: Path, *, heartbeat_interval: float = 0.2) -> None:
        self.workdir = workdir
        self.log_path = workdir / "attempt.log"
        self.heartbeat_interval = heartbeat_interval
        self.events: list[BaseEvent] = []
        self.raw_lines: list[bytes] = []
        self.bad_lines: list[bytes] = []
        self.process: subprocess.Popen[bytes] | None = None
        self._feeding = threading.Event()
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------ starting and feeding

    def start(
        self,
        launch: LaunchDocument | bytes | None,
        *,
        extra_args: list[str] | None = None,
        feed: bool = True,
    ) -> Self:
        """Start the runner and send ``launch`` (a document, raw bytes, or nothing)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        read_end, write_end = os.pipe()
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [*runner_command(write_end), *(extra_args or [])],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                start_new_session=True,
                pass_fds=(write_end,),
            )
        os.close(write_end)
        self._spawn(self._read_events, read_end)
        if launch is not None:
            data = launch.to_json() if isinstance(launch, LaunchDocument) else launch
            self._write(data if data.endswith(b"\n") else data + b"\n")
        if feed:
            self._feeding.set()
            self._spawn(self._feed)
        return self

    def stop_feeding(self) -> None:
        """Act like a frozen TaskManager: stdin stays open but goes silent."""
        self._feeding.clear()

    def close_stdin(self) -> None:
        """Act like a dead TaskManager: stdin reaches EOF."""
        self._feeding.clear()
        assert self.process is not None and self.process.stdin is not None
        with self._lock, contextlib.suppress(OSError):
            self.process.stdin.close()

    def _write(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        with self._lock:
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def _feed(self) -> None:
        while self._running() and not self._closing.is_set():
            if self._feeding.is_set():
                try:
                    self._write(b"\n")
                except (OSError, ValueError):
                    return
            # The heartbeat cadence of a TaskManager, not a wait for a condition.
            self._closing.wait(self.heartbeat_interval)

    def _read_events(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                self.raw_lines.append(line)
                try:
                    event = decode_event(line)
                except Exception:
                    self.bad_lines.append(line)
                    continue
                self.events.append(event)

    def _spawn(self, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    # ------------------------------------------------------------ observing

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def _running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kinds(self) -> list[str]:
        return [getattr(event, "event", "?") for event in self.events]

    def checkpoints(self) -> list[dict[str, Any]]:
        return [e.metadata for e in list(self.events) if isinstance(e, CheckpointEvent)]

    def wait_event(
        self, predicate: Callable[[BaseEvent], bool], timeout: float, what: str = "event"
    ) -> BaseEvent:
        def found() -> BaseEvent | None:
            return next((e for e in list(self.events) if predicate(e)), None)

        def seen() -> BaseEvent | None:
            event = found()
            if event is None and not self._running() and self._events_closed():
                raise AssertionError(
                    f"runner ended without {what}; events {self.kinds()}\n{self.log()}"
                )
            return event

        event = wait_until(seen, timeout, message=f"{what} (events {self.kinds()})")
        assert event is not None
        return event

    def wait_exit(self, timeout: float) -> int:
        """Wait for the runner to exit and its events pipe to close; return the exit code."""
        assert self.process is not None
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"runner still running after {timeout}s\n{self.log()}") from None
        wait_until(self._events_closed, 10.0, message="events pipe closed")
        return code

    def wait_final(self, timeout: float) -> FinishedEvent | FailedEvent:
        """Wait for the exit, and return the final event (asserting the protocol held)."""
        code = self.wait_exit(timeout)
        assert not self.bad_lines, f"malformed event lines: {self.bad_lines}"
        assert self.events, f"no events; exit code {code}\n{self.log()}"
        final = self.events[-1]
        assert isinstance(final, FinishedEvent | FailedEvent), (self.kinds(), self.log())
        assert sum(is_final(e) for e in self.events) == 1, self.kinds()
        assert code == (0 if isinstance(final, FinishedEvent) else 1), (code, self.log())
        return final

    def _events_closed(self) -> bool:
        return not self._threads[0].is_alive()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def group_members(self) -> list[int]:
        """Pids still alive (not zombies) in the runner's process group."""
        members = []
        for process in psutil.process_iter(["status"]):
            with contextlib.suppress(OSError, psutil.Error):
                if (
                    os.getpgid(process.pid) == self.pid
                    and process.info["status"] != psutil.STATUS_ZOMBIE
                ):
                    members.append(process.pid)
        return members

    # ------------------------------------------------------------ ending

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def close(self) -> None:
        """Stop feeding, kill whatever is left of the group, and reap the runner."""
        self._feeding.clear()
        self._closing.set()
        if self.process is None:
            return
        self.kill_group()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@contextlib.contextmanager
def running(
    workdir: Path, launch: LaunchDocument | bytes | None, **kwargs: Any
) -> Iterator[RunnerHarness]:
    """``with running(tmp_path, doc) as runner:`` starts a runner and always cleans it up."""
    harness = RunnerHarness(workdir)
    try:
        yield harness.start(launch, **kwargs)
    finally:
        harness.close()

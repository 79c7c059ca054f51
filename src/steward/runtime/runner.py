"""The runner: the child process that runs one attempt of a pipeline.

Started by a TaskManager as ``python -m steward.runtime.runner --events-fd N``; the protocol
(launch document on stdin, heartbeats, events on fd N, exit codes, SIGTERM) is specified in
:mod:`steward.wire.runner_protocol`. This module owns the attempt's life, in this order:

1. open the events channel (exit 2 if fd N is unusable: nothing could be reported);
2. lead a process group, and take the work directory off ``sys.path`` (``python -m`` puts
   it first, where files of the attempt could shadow real modules);
3. read the launch document from stdin (``failed`` if it is bad or late), arm the
   dead-man's switch, hide stdin from the pipeline, report ``started``;
4. load the job's code without running it (a script is compiled, a pipeline imported; code
   that cannot load fails the job for good: ``ErrorInfo.permanent``); make the job's files
   and environment what spark-submit makes them (:mod:`~steward.runtime.dependencies`); on
   Spark Connect, stop what earlier attempts left running on the server
   (:mod:`~steward.runtime.connect`), on a standalone master kill their applications
   (:mod:`~steward.runtime.standalone`); export the attempt's Spark settings for any session
   the code builds (:mod:`~steward.sparkconf.session_settings`); then run the script as
   ``__main__`` (:mod:`~steward.runtime.script`) or call ``main(ctx)`` or, in initialize
   mode, the optional ``initialize(ctx)``, with SIGTERM raising :class:`AttemptCancelled`
   (all of step 4: :mod:`~steward.runtime.user_code`);
5. check the return value (JSON, at most 1 MiB), wait for Spark's pending micro-batch
   reports, and write exactly one final event, ``finished`` or ``failed``;
6. stop the SparkSession, SIGKILL whatever else is left of the process group, and exit
   with 0 or 1 through ``os._exit`` (a pipeline's forgotten non-daemon thread cannot hold
   the process, nor can its atexit handlers run user code after the outcome).

Whatever user code does, it cannot write anything but well-formed events to fd N: every
exception (BaseException included) becomes ``failed`` with its type, message and traceback.
``kill -USR1 <runner pid>`` writes the stack of every thread to the attempt's log.

With ``--prewarm`` the runner is a warm spare (see "Warm runners" in
:mod:`steward.wire.runner_protocol`): :func:`run_spare` arms the dead-man's switch first, builds
and warms a SparkSession, reports ``ready``, waits for its launch document, moves to the
attempt's folder, and from there runs the attempt like any runner, with the warm session
behind ``ctx.spark``.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from steward import logformat
from steward.errors import CorruptStateError
from steward.process_name import name_this_process
from steward.runtime.app_watch import SparkAppWatcher
from steward.runtime.channel import EventChannel
from steward.runtime.deadman import (
    DeadmanSwitch,
    LaunchLineCollector,
    detach_stdin,
    ensure_own_process_group,
    kill_leftovers,
    read_launch_line,
)
from steward.runtime.outcomes import describe_error
from steward.runtime.user_code import run_code
from steward.wire.records import ErrorInfo
from steward.wire.redaction import Redactor, redact_error
from steward.wire.runner_protocol import (
    DEFAULT_LAUNCH_TIMEOUT,
    EXIT_FAILED,
    EXIT_FINISHED,
    EXIT_USAGE,
    FailedEvent,
    FinalEvent,
    FinishedEvent,
    LaunchDocument,
    LaunchError,
    ReadyEvent,
    RunnerError,
    StartedEvent,
    WarmupError,
    error_type_name,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Named explicitly: run with -m, __name__ is "__main__".
log = logging.getLogger("steward.runtime.runner")


def main(argv: Sequence[str] | None = None) -> NoReturn:
    name_this_process("steward-runner")
    args = _parse_args(argv)
    _configure_logging()
    try:
        channel = EventChannel(args.events_fd)
    except OSError as exc:
        log.error("events fd %s is not usable: %s", args.events_fd, exc)
        _exit(EXIT_USAGE)
    ensure_own_process_group()
    _drop_workdir_from_path()
    _default_worker_python()
    try:
        if args.prewarm:
            code = run_spare(
                channel, spark_master=args.spark_master, deadman_timeout=args.deadman_timeout
            )
        else:
            code = run_attempt(channel, launch_timeout=args.launch_timeout)
    except BaseException as exc:
        # A bug of the runner itself: still an outcome for the parent, never a bare traceback.
        log.exception("runner error")
        error = ErrorInfo(type=error_type_name(RunnerError), message=f"runner error: {exc!r}")
        channel.emit(FailedEvent(error=error))
        code = EXIT_FAILED
    if killed := kill_leftovers():
        log.info("killed processes left in the attempt's group pids=%s", killed)
    _exit(code)


def _default_worker_python() -> None:
    """Spark's Python workers run this interpreter unless the host or the job names another.

    PySpark's own default is ``python3`` from ``PATH``. A TaskManager started from a virtualenv
    it did not activate finds some other Python there: one without the packages the job runs
    with in this process (a UDF's imports fail in the workers) and, behind a pyenv shim, slower
    to start. spark-submit run from an activated venv gets the venv's Python; this is that. A
    ``PYSPARK_PYTHON`` of the host's environment stays, and a job's ``spark.pyspark.python``
    (or its own environment) wins over both (:func:`steward.runtime.dependencies.prepare`).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def run_attempt(channel: EventChannel, *, launch_timeout: float) -> int:
    """Steps 3 to 6 of the module docstring; returns the exit code."""
    try:
        stdin = detach_stdin()
        launch = _read_launch(stdin, launch_timeout)
    except (LaunchError, OSError) as exc:
        log.error("launch rejected: %s", exc)
        channel.emit(FailedEvent(error=describe_error(exc)))
        return EXIT_FAILED
    DeadmanSwitch(stdin, launch.deadman_timeout).start()
    return _run_launched(channel, launch)


def run_spare(channel: EventChannel, *, spark_master: str, deadman_timeout: float) -> int:
    """A warm spare: warm a SparkSession, report ``ready``, then run the attempt it is given."""
    stdin = detach_stdin()
    collector = LaunchLineCollector()
    # Armed before the JVM starts: a spare must die with its TaskManager like an attempt.
    DeadmanSwitch(stdin, deadman_timeout, on_data=collector.feed).start()
    began = time.monotonic()
    try:
        session = _warm_session(spark_master)
    except Exception as exc:
        log.exception("spare could not warm a SparkSession master=%s", spark_master)
        error = WarmupError(f"could not warm a SparkSession on {spark_master}: {exc!r}")
        channel.emit(FailedEvent(error=describe_error(error)))
        return EXIT_FAILED
    seconds = time.monotonic() - began
    log.info("spare ready master=%s warmed_in=%.2fs", spark_master, seconds)
    channel.emit(ReadyEvent(pid=os.getpid(), seconds=seconds))
    try:
        launch = _handed_over(collector, spark_master)
    except (LaunchError, OSError) as exc:
        log.error("launch rejected: %s", exc)
        channel.emit(FailedEvent(error=describe_error(exc)))
        return EXIT_FAILED
    return _run_launched(channel, launch, warm_session=session)


def _handed_over(collector: LaunchLineCollector, spark_master: str) -> LaunchDocument:
    """Wait (no deadline: the dead-man's switch covers the parent) for the launch document."""
    launch = _parse_launch(collector.wait())
    if launch.spark_master != spark_master:
        raise LaunchError(
            f"job {launch.job_id} needs master {launch.spark_master!r};"
            f" this spare warmed {spark_master!r}"
        )
    if launch.workdir is not None:
        os.chdir(launch.workdir)
    return launch


def _warm_session(spark_master: str) -> SparkSession:
    from steward.runtime import spark as spark_support

    session = spark_support.new_session(
        master=spark_master, name=spark_support.spare_app_name(), conf={}
    )
    spark_support.warm_up(session)
    return session


def _run_launched(
    channel: EventChannel, launch: LaunchDocument, warm_session: SparkSession | None = None
) -> int:
    """Run the launched attempt to its final event (steps 3 to 6 after the launch line)."""
    if logformat.from_environment() == logformat.JSON:  # from now on, every record names it
        fields = {"job": launch.job_id, "attempt": launch.attempt, "epoch": launch.epoch}
        logformat.configure(logformat.JSON, "runner", fields=fields)
    log.info(
        "attempt starting job=%s attempt=%d epoch=%d mode=%s recovery=%s",
        launch.job_id,
        launch.attempt,
        launch.epoch,
        launch.mode,
        launch.is_recovery,
    )
    channel.emit(StartedEvent(pid=os.getpid(), pgid=os.getpgrp()))
    watcher = SparkAppWatcher(channel).start()
    outcome, context = run_code(launch, channel, warm_session)
    watcher.stop()
    if os.getpid() != channel.owner_pid:
        # The child of a pipeline's os.fork() returned from the hook: it must neither report
        # nor clean up (stopping Spark or killing the group would hit the real runner).
        os._exit(EXIT_FAILED)
    if isinstance(outcome, FailedEvent):
        outcome = _redacted(outcome, launch)
        log.error(
            "attempt failed job=%s attempt=%d: %s: %s\n%s",
            launch.job_id,
            launch.attempt,
            outcome.error.type,
            outcome.error.message,
            outcome.error.traceback or "",
        )
    else:
        log.info("attempt finished job=%s attempt=%d", launch.job_id, launch.attempt)
    sent = _emit_final(channel, outcome)
    if context is not None:
        context.close()
    return EXIT_FINISHED if isinstance(sent, FinishedEvent) else EXIT_FAILED


def _redacted(outcome: FailedEvent, launch: LaunchDocument) -> FailedEvent:
    """The failure as reported and logged: the job's secrets hidden (its message and
    traceback may quote its settings or arguments; see steward.wire.redaction)."""
    rule = Redactor.for_job(launch.spec.spark_conf, launch.spec.args, launch.spec.env)
    return outcome.model_copy(update={"error": redact_error(outcome.error, rule)})


def _emit_final(channel: EventChannel, outcome: FinalEvent) -> FinalEvent:
    """Send ``outcome``; return what was sent (a FailedEvent if it could not be encoded)."""
    try:
        channel.emit(outcome)
    except Exception as exc:
        # Unreachable by design (values and messages are checked before); if it happens
        # anyway, the parent must still get an outcome rather than a runner traceback.
        log.exception("could not send the outcome")
        message = f"outcome not sendable: {exc!r}"
        failed = FailedEvent(error=ErrorInfo(type=error_type_name(RunnerError), message=message))
        channel.emit(failed)
        return failed
    return outcome


def _read_launch(fd: int, timeout: float) -> LaunchDocument:
    line, _ = read_launch_line(fd, timeout)  # bytes after the line are early heartbeats
    return _parse_launch(line)


def _parse_launch(line: bytes) -> LaunchDocument:
    try:
        return LaunchDocument.from_json(line)
    except CorruptStateError as exc:
        raise LaunchError(f"bad launch document: {exc}") from exc


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m steward.runtime.runner",
        description="Run one attempt of a Steward pipeline (started by a TaskManager).",
    )
    parser.add_argument("--events-fd", type=int, required=True, help="fd to write events to")
    parser.add_argument(
        "--launch-timeout",
        type=float,
        default=DEFAULT_LAUNCH_TIMEOUT,
        help="seconds to wait for the launch document on stdin",
    )
    parser.add_argument(
        "--prewarm",
        action="store_true",
        help="be a warm spare: build a SparkSession first, then wait for a launch document",
    )
    parser.add_argument("--spark-master", default="local[*]", help="the spare's Spark master")
    parser.add_argument(
        "--deadman-timeout",
        type=float,
        default=None,
        help="a spare's dead-man's switch (seconds without a byte on stdin)",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on bad usage; keep our own exit path
        _exit(EXIT_USAGE if exc.code else EXIT_FINISHED)
    if args.prewarm and not (args.deadman_timeout and args.deadman_timeout > 0):
        parser.print_usage(sys.stderr)
        print("--prewarm needs a positive --deadman-timeout", file=sys.stderr)
        _exit(EXIT_USAGE)
    return args


def _configure_logging() -> None:
    # stdout and stderr are the attempt's log file: line-buffer so the pipeline's prints and
    # the runner's records interleave in the order they happened.
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError):
            stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if logformat.from_environment() == logformat.JSON:  # the TaskManager's log.format
        logformat.configure(logformat.JSON, "runner")
    logging.getLogger("py4j").setLevel(logging.WARNING)
    # A crash in a C extension leaves its Python stack in the log, and `kill -USR1 <pid>`
    # dumps every thread's stack there: how to see where a stuck attempt is stuck.
    faulthandler.enable(sys.stderr)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)


def _drop_workdir_from_path() -> None:
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]


def _exit(code: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()

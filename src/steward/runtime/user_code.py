"""The job's own code in a runner: loaded, given its files and settings, and run.

Step 4 of :mod:`steward.runtime.runner`: the job's py-files and environment are made what
spark-submit makes them (:mod:`~steward.runtime.dependencies`); its code is loaded without
running it (a script compiled, a pipeline imported; code that cannot load fails the job for
good: ``ErrorInfo.permanent``); on Spark Connect what earlier attempts left running on the
server is stopped (:mod:`~steward.runtime.connect`), on a standalone master their
applications are killed (:mod:`~steward.runtime.standalone`); the attempt's Spark settings
are exported for any session the code builds (:mod:`~steward.sparkconf.session_settings`);
then the script runs as ``__main__`` (:mod:`~steward.runtime.script`), or ``main(ctx)`` or
``initialize(ctx)`` is called, with SIGTERM raising
:class:`~steward.wire.runner_protocol.AttemptCancelled`. Whatever the code raises (BaseException
included) becomes a ``failed`` outcome.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING

from steward.artifacts.programs import ProgramError
from steward.runtime import connect, dependencies, script, standalone
from steward.runtime.artifact import entry_file, load_pipeline
from steward.runtime.channel import EventChannel
from steward.runtime.context import JobContext
from steward.runtime.outcomes import describe_error, result_value
from steward.sparkconf import session_settings
from steward.wire.jobs import ProgramKind
from steward.wire.runner_protocol import (
    ArtifactError,
    AttemptCancelled,
    FailedEvent,
    FinalEvent,
    FinishedEvent,
    LaunchDocument,
    RunMode,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CONNECT_FENCE_TIMEOUT = 60.0
"""Seconds to stop an earlier attempt's Spark Connect operations before this one starts."""

STANDALONE_FENCE_TIMEOUT = 60.0
"""Seconds to kill earlier attempts' applications on a standalone master before this one
starts (the same budget as Spark Connect's)."""


def run_code(
    launch: LaunchDocument, channel: EventChannel, warm_session: SparkSession | None = None
) -> tuple[FinalEvent, JobContext | None]:
    """Step 4 of :mod:`steward.runtime.runner`: the job's code, loaded and run; its outcome
    and the context it ran with (None if it never got one)."""
    context: JobContext | None = None
    try:
        with _sigterm_cancels():
            # The job's py-files are on sys.path before its code is imported: a pipeline
            # imports them at its top, as a spark-submit application does.
            settings = dependencies.prepare(launch)
            try:
                loaded = _load_program(launch)
            except (ArtifactError, ProgramError, SyntaxError) as exc:
                # The code cannot change between attempts: no restart can fix this.
                error = describe_error(exc).model_copy(update={"permanent": True})
                return FailedEvent(error=error), None
            conf = session_settings.settings(launch, settings)
            _kill_earlier_standalone_apps(launch, conf)
            remote = _fence_earlier_connect_attempts(launch)
            session_settings.export(conf, Path.cwd() / session_settings.CONF_FOLDER, remote=remote)
            context = JobContext(
                launch,
                channel,
                modules=loaded.modules,
                warm_session=warm_session,
                spark_settings=conf,
            )
            if warm_session is not None and loaded.kind is ProgramKind.SCRIPT:
                context.spark  # noqa: B018  (adopted now: the script's getOrCreate returns it)
            value = None if loaded.call is None else loaded.call(context)
            result = result_value(value, loaded.what)
            context.flush()
        return FinishedEvent(value=result), context
    except BaseException as exc:
        return FailedEvent(error=describe_error(exc)), context


def _fence_earlier_connect_attempts(launch: LaunchDocument) -> str | None:
    """On Spark Connect: stop what earlier attempts left running on the server, before any
    user code runs; return this attempt's own session URL (None for other masters)."""
    if not connect.is_connect(launch.spark_master):
        return None
    scope = launch.checkpoint_dir  # one job incarnation, the same for all its attempts
    connect.interrupt_earlier_attempts(
        launch.spark_master, launch.job_id, launch.attempt, CONNECT_FENCE_TIMEOUT, scope=scope
    )
    return connect.remote_url(launch.spark_master, launch.job_id, launch.attempt, scope=scope)


def _kill_earlier_standalone_apps(launch: LaunchDocument, conf: Mapping[str, str]) -> None:
    """On a standalone master: kill what earlier attempts' applications still run there (a
    driver cut off from the master leaves its executors running), before any user code."""
    if launch.mode is not RunMode.MAIN or not standalone.is_standalone(launch.spark_master):
        return  # an initialize hook holds no lease: it may run beside a live attempt
    names = standalone.earlier_app_names(launch.job_id, launch.attempt)
    if not (names or launch.earlier_spark_apps):
        return
    standalone.kill_earlier_applications(
        launch.spark_master,
        conf,
        known_ids=launch.earlier_spark_apps,
        names=names,
        timeout=STANDALONE_FENCE_TIMEOUT,
    )


@dataclass(frozen=True)
class _Loaded:
    """What an attempt runs: a script, or a pipeline's hook (None: nothing to do)."""

    kind: ProgramKind
    call: Callable[[JobContext], object] | None
    what: str
    modules: list[ModuleType] = field(default_factory=list)


def _load_program(launch: LaunchDocument) -> _Loaded:
    """Load the job's code without running it (a script is compiled, a pipeline imported)."""
    spec = launch.spec
    # Submission resolves the kind; "auto" is a job graph from before scripts existed: then
    # every job was a pipeline.
    kind = spec.program
    if kind is ProgramKind.SCRIPT:
        if launch.mode is RunMode.INITIALIZE:
            return _Loaded(kind, None, "initialize")  # a script has no initialize hook
        file = entry_file(launch.artifact_path, spec.entrypoint)
        code = script.load(file)
        argv = [file.name, *spec.args]
        return _Loaded(kind, lambda _ctx: script.run(file, argv, code), "the script")
    pipeline = load_pipeline(launch.artifact_path, spec.entrypoint)
    what = spec.entrypoint if launch.mode is RunMode.MAIN else "initialize"
    return _Loaded(kind, pipeline.hook(launch.mode), what, [pipeline.module])


@contextlib.contextmanager
def _sigterm_cancels() -> Iterator[None]:
    def cancel(signum: int, frame: FrameType | None) -> None:
        raise AttemptCancelled("the attempt was cancelled (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, cancel)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

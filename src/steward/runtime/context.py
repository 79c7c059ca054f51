"""The pipeline SDK: ``steward.JobContext``, what ``main(ctx)`` and ``initialize(ctx)`` get.

A pipeline is a module with ``main(ctx)`` (any JSON-serialisable return value becomes the
job's result) and optionally ``initialize(ctx)`` (runs before the first attempt and on
recovery, in its own runner process)::

    def main(ctx: JobContext) -> dict[str, int]:
        words = ctx.stage("words", lambda: ctx.spark.read.text(ctx.args[0]))
        ctx.report_progress(phase="counting")
        return {"words": words.count()}

What the context offers (see each member): the job's identity (``job_id``, ``attempt``,
``epoch``, ``is_recovery``, ``args``, ``spec``), a lazily built SparkSession (``spark``),
batch stages materialised once per job (``stage``), progress reports (``report_progress``),
and per-query streaming checkpoint locations (``streaming_checkpoint_location``). Every
completed micro-batch of a streaming query is reported as a checkpoint on its own.

This module does not import pyspark: :mod:`steward.runtime.spark` is imported on first use
of ``ctx.spark``, so a pipeline that never touches Spark starts no JVM. On a warm spare
runner the session already exists: ``ctx.spark`` then adopts it (the job's SQL conf, the
listener) instead of starting a JVM.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from steward.artifacts import checkpoint_dirs
from steward.runtime.channel import EventSink
from steward.wire.jobs import JobSpec
from steward.wire.runner_protocol import (
    MAX_PROGRESS_BYTES,
    CheckpointEvent,
    LaunchDocument,
    ProgressEvent,
    RunMode,
)
from steward.wire.values import JsonValue

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
STAGES_FOLDER = "stages"
STREAMING_FOLDER = "streaming"
# Where stages are written before the rename: stages/_tmp/<name>/<attempt>-<uuid>. One folder
# per stage name, so cleaning one stage's leftovers cannot touch another's.
_TMP_FOLDER = "_tmp"
_DRAIN_TIMEOUT = 10.0


def _check_name(kind: str, name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(
            f"invalid {kind} name {name!r}: use 1-128 letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    return name


class JobContext:
    """What one attempt of a pipeline knows and can do. Thread-safe."""

    def __init__(
        self,
        launch: LaunchDocument,
        events: EventSink,
        *,
        modules: Sequence[ModuleType] = (),
        warm_session: SparkSession | None = None,
        spark_settings: Mapping[str, str] | None = None,
    ) -> None:
        self._launch = launch
        # What a session of this attempt is built with (session_settings.settings): the job's
        # spark_conf plus what its dependencies need; the job's spark_conf alone if not given.
        self._spark_settings = dict(
            launch.spec.spark_conf if spark_settings is None else spark_settings
        )
        self._events = events
        self._modules = tuple(modules)
        self._lock = threading.Lock()  # guards _stages
        self._spark_lock = threading.Lock()  # held while a JVM starts; separate on purpose
        self._spark: SparkSession | None = None
        # A warm spare's session, adopted on the first use of ctx.spark (stopped in any case).
        self._warm: SparkSession | None = warm_session
        # Cumulative: earlier attempts' stages plus this attempt's, sent with every checkpoint.
        self._stages: dict[str, str] = dict(launch.completed_stages)

    # ------------------------------------------------------------ identity

    @property
    def job_id(self) -> str:
        return self._launch.job_id

    @property
    def attempt(self) -> int:
        """1 for the first attempt, +1 for every restart."""
        return self._launch.attempt

    @property
    def epoch(self) -> int:
        """The epoch of the leader that started this attempt."""
        return self._launch.epoch

    @property
    def mode(self) -> RunMode:
        """``main``, or ``initialize`` while the initialize hook runs."""
        return self._launch.mode

    @property
    def is_recovery(self) -> bool:
        """True when a restart or a new leader runs the job again after an interruption."""
        return self._launch.is_recovery

    @property
    def args(self) -> list[str]:
        """The job's arguments (a copy)."""
        return list(self._launch.spec.args)

    @property
    def spec(self) -> JobSpec:
        return self._launch.spec

    @property
    def checkpoint_dir(self) -> str:
        """The job's own folder (local path or URL), the same for every attempt."""
        return self._launch.checkpoint_dir

    @property
    def last_checkpoint(self) -> Mapping[str, JsonValue] | None:
        """Metadata of the job's latest completed checkpoint, if any."""
        return self._launch.last_checkpoint

    @property
    def completed_stages(self) -> dict[str, str]:
        """Stage name -> path of every stage completed so far (a copy)."""
        with self._lock:
            return dict(self._stages)

    # ------------------------------------------------------------ Spark

    @property
    def spark(self) -> SparkSession:
        """The attempt's SparkSession, built on first use and stopped when the attempt ends."""
        with self._spark_lock:
            if self._spark is None and self._warm is not None:
                from steward.runtime import spark as spark_support

                self._spark = spark_support.adopt_warm_session(
                    self._warm,
                    name=spark_support.app_name(self.job_id, self.attempt),
                    conf=self.spec.spark_conf,
                    on_micro_batch=self._emit_checkpoint,
                    modules=self._modules,
                )
                self._warm = None
            if self._spark is None:
                from steward.runtime import spark as spark_support

                self._spark = spark_support.build_session(
                    master=self._launch.spark_master,
                    name=spark_support.app_name(self.job_id, self.attempt),
                    conf=self._spark_settings,
                    on_micro_batch=self._emit_checkpoint,
                    modules=self._modules,
                )
            return self._spark

    @property
    def spark_started(self) -> bool:
        return self._spark is not None

    def stage(self, name: str, build: Callable[[], DataFrame]) -> DataFrame:
        """Materialise ``build()`` once per job as parquet and return it read back.

        If an earlier attempt (or this one) completed stage ``name``, its data is read back
        and ``build`` is not called. Otherwise the DataFrame is written to a scratch folder
        under ``<checkpoint_dir>/stages/_tmp/``, renamed to ``stages/<name>`` (a half-written
        stage is never reused) and reported as a checkpoint, so a restarted attempt skips it.
        """
        _check_name("stage", name)
        with self._lock:
            recorded = self._stages.get(name)
        if recorded is not None:
            if checkpoint_dirs.exists(recorded):
                log.info("stage reused name=%s path=%s", name, recorded)
                return self.spark.read.parquet(recorded)
            log.warning("stage recorded but gone, rebuilding name=%s path=%s", name, recorded)
        frame = build()
        self._check_dataframe(name, frame)
        stages_dir = checkpoint_dirs.join(self.checkpoint_dir, STAGES_FOLDER)
        path = checkpoint_dirs.join(stages_dir, name)
        scratch = checkpoint_dirs.join(stages_dir, _TMP_FOLDER, name)
        # Leftovers of attempts killed while writing this stage; only one attempt runs at once.
        checkpoint_dirs.remove(scratch)
        tmp = checkpoint_dirs.join(scratch, f"{self.attempt}-{uuid.uuid4().hex}")
        frame.write.parquet(tmp)
        checkpoint_dirs.replace(tmp, path)
        checkpoint_dirs.remove(scratch)
        with self._lock:
            self._stages[name] = path
        log.info("stage materialised name=%s path=%s", name, path)
        self._emit_checkpoint({"kind": "stage", "stage": name, "path": path})
        return self.spark.read.parquet(path)

    def streaming_checkpoint_location(self, name: str = "default") -> str:
        """``<checkpoint_dir>/streaming/<name>``: a streaming query's checkpointLocation.

        Stable across attempts, so a restarted attempt resumes the query where Spark's
        checkpoint says; use one name per query.
        """
        return checkpoint_dirs.join(
            self.checkpoint_dir, STREAMING_FOLDER, _check_name("query", name)
        )

    # ------------------------------------------------------------ reporting

    def report_progress(self, **fields: JsonValue) -> None:
        """Send ``fields`` (JSON values, at most 64 KiB encoded) to the TaskManager."""
        try:
            encoded = json.dumps(fields, allow_nan=False, ensure_ascii=False)
            encoded.encode()  # lone surrogates pass json.dumps but cannot be sent
        except (TypeError, ValueError) as exc:  # UnicodeError is a ValueError
            raise TypeError(f"report_progress: fields must be JSON values ({exc})") from None
        if (size := len(encoded.encode())) > MAX_PROGRESS_BYTES:
            raise ValueError(
                f"report_progress: {size} bytes encoded; the limit is {MAX_PROGRESS_BYTES}"
            )
        self._events.emit(ProgressEvent(progress=json.loads(encoded)))

    def _emit_checkpoint(self, metadata: dict[str, Any]) -> None:
        with self._lock:
            metadata = {**metadata, "stages": dict(self._stages)}
        self._events.emit(CheckpointEvent(metadata=metadata))

    # ------------------------------------------------------------ end of attempt (runner)

    def flush(self) -> None:
        """Deliver the checkpoints of micro-batches Spark completed but has not announced."""
        if self._spark is not None:
            from steward.runtime import spark as spark_support

            spark_support.drain_listener_events(self._spark, _DRAIN_TIMEOUT)

    def close(self) -> None:
        """Stop the SparkSession, if one was built (by ``ctx.spark`` or by the pipeline's own
        builder). Called by the runner, after the outcome."""
        with self._spark_lock:
            session, self._spark = self._spark or self._warm, None
            self._warm = None
        if session is None and "pyspark" not in sys.modules:
            return  # nothing imported pyspark: no session can exist
        from steward.runtime import spark as spark_support

        session = session or spark_support.active_session()
        if session is not None:
            spark_support.stop_session(session)

    @staticmethod
    def _check_dataframe(name: str, frame: object) -> None:
        from pyspark.sql import DataFrame

        if not isinstance(frame, DataFrame):
            raise TypeError(
                f"stage {name!r}: build must return a pyspark DataFrame, got {type(frame).__name__}"
            )

"""JobContext without Spark: identity, progress, locations, checks; and that it stays JVM-free."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from steward.runtime.channel import MemorySink
from steward.runtime.context import JobContext
from steward.wire.jobs import JobSpec
from steward.wire.runner_protocol import CheckpointEvent, LaunchDocument, ProgressEvent, RunMode


def make_context(tmp_path: Path, **overrides: Any) -> tuple[JobContext, MemorySink]:
    fields: dict[str, Any] = {
        "job_id": "job-3",
        "attempt": 4,
        "epoch": 9,
        "spec": JobSpec(job_id="job-3", args=["a", "b"], spark_conf={"k": "v"}),
        "artifact_path": str(tmp_path / "p.py"),
        "checkpoint_dir": str(tmp_path / "ck"),
        "deadman_timeout": 10,
    }
    fields.update(overrides)
    sink = MemorySink()
    return JobContext(LaunchDocument(**fields), sink), sink


def test_the_context_exposes_the_attempt_it_runs(tmp_path: Path) -> None:
    ctx, _ = make_context(
        tmp_path,
        is_recovery=True,
        mode=RunMode.INITIALIZE,
        completed_stages={"words": "/ck/stages/words"},
        last_checkpoint={"kind": "stage"},
    )

    assert (ctx.job_id, ctx.attempt, ctx.epoch) == ("job-3", 4, 9)
    assert ctx.is_recovery and ctx.mode is RunMode.INITIALIZE
    assert ctx.args == ["a", "b"]
    assert ctx.spec.spark_conf == {"k": "v"}
    assert ctx.checkpoint_dir == str(tmp_path / "ck")
    assert ctx.completed_stages == {"words": "/ck/stages/words"}
    assert ctx.last_checkpoint == {"kind": "stage"}
    assert not ctx.spark_started


def test_args_and_completed_stages_are_copies(tmp_path: Path) -> None:
    ctx, _ = make_context(tmp_path)

    ctx.args.append("c")
    ctx.completed_stages["x"] = "y"

    assert ctx.args == ["a", "b"]
    assert ctx.completed_stages == {}


def test_report_progress_sends_a_progress_event(tmp_path: Path) -> None:
    ctx, sink = make_context(tmp_path)

    ctx.report_progress(rows=10, phase="load", ratio=0.5, tags=["x"], extra=None)

    assert sink.events == [
        ProgressEvent(
            at=sink.events[0].at,
            progress={"rows": 10, "phase": "load", "ratio": 0.5, "tags": ["x"], "extra": None},
        )
    ]


@pytest.mark.parametrize("value", [{1, 2}, float("nan"), object(), b"bytes", "lone \udc80"])
def test_report_progress_refuses_what_is_not_json(tmp_path: Path, value: object) -> None:
    ctx, sink = make_context(tmp_path)

    with pytest.raises(TypeError, match="fields must be JSON values"):
        ctx.report_progress(value=value)
    assert sink.events == []


def test_report_progress_refuses_huge_reports(tmp_path: Path) -> None:
    ctx, _ = make_context(tmp_path)

    with pytest.raises(ValueError, match="the limit is 65536"):
        ctx.report_progress(blob="x" * 70_000)


def test_streaming_checkpoint_locations_live_under_the_checkpoint_dir(tmp_path: Path) -> None:
    ctx, _ = make_context(tmp_path, checkpoint_dir="s3a://bucket/ck/job-3/")

    assert ctx.streaming_checkpoint_location() == "s3a://bucket/ck/job-3/streaming/default"
    assert ctx.streaming_checkpoint_location("clicks") == "s3a://bucket/ck/job-3/streaming/clicks"
    with pytest.raises(ValueError, match="invalid query name"):
        ctx.streaming_checkpoint_location("../other-job")


@pytest.mark.parametrize("name", ["", "../up", "a/b", ".hidden", "_tmp-x", "x" * 200])
def test_stage_names_must_be_safe_path_components(tmp_path: Path, name: str) -> None:
    ctx, _ = make_context(tmp_path)

    with pytest.raises(ValueError, match="invalid stage name"):
        ctx.stage(name, lambda: None)  # type: ignore[arg-type,return-value]
    assert not ctx.spark_started


def test_checkpoints_carry_every_completed_stage(tmp_path: Path) -> None:
    ctx, sink = make_context(tmp_path, completed_stages={"a": "/ck/stages/a"})

    # What the micro-batch listener calls; stage() does the same after a rename.
    ctx._emit_checkpoint({"kind": "micro-batch", "batchId": 0})

    event = sink.events[-1]
    assert isinstance(event, CheckpointEvent)
    assert event.metadata == {"kind": "micro-batch", "batchId": 0, "stages": {"a": "/ck/stages/a"}}


def test_a_pipeline_that_never_touches_spark_never_imports_pyspark(tmp_path: Path) -> None:
    # In a fresh interpreter: this test process may have imported pyspark for other tests.
    script = textwrap.dedent(
        f"""
        import sys
        import steward.runtime
        from steward.runtime import runner
        from steward.runtime.channel import MemorySink
        from steward.runtime.context import JobContext
        from steward.wire.runner_protocol import LaunchDocument
        from steward.wire.jobs import JobSpec

        ctx = JobContext(
            LaunchDocument(job_id="j", attempt=1, epoch=1, spec=JobSpec(job_id="j"),
                           artifact_path="/x.py", checkpoint_dir={str(tmp_path)!r},
                           deadman_timeout=5),
            MemorySink(),
        )
        ctx.report_progress(n=1)
        ctx.streaming_checkpoint_location()
        ctx.flush()
        ctx.close()
        print(sorted(m for m in sys.modules if m.startswith(("pyspark", "py4j"))))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )

    assert result.stdout.strip() == "[]"

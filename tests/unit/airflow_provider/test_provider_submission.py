"""The operator's options as Steward's spec, in bytes that do not change between tries."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest

from steward.wire.jobs import JobSpec
from steward.wire.rest import SubmitRequest
from steward_airflow.submission import SubmissionError, build


def pipeline(tmp_path: Path) -> Path:
    app = tmp_path / "app.py"
    app.write_text("def main(ctx):\n    return 1\n")
    return app


def test_every_option_lands_in_a_spec_steward_accepts(tmp_path: Path) -> None:
    lib = tmp_path / "lib.py"
    lib.write_text("X = 1\n")
    data = tmp_path / "data.csv"
    data.write_text("a,b\n")
    env = tmp_path / "env.tar.gz"
    env.write_bytes(b"\x1f\x8b fake")
    made = build(
        job_id="d.t.run-0123456789abcdef",
        application=pipeline(tmp_path),
        application_args=["in", 3],
        py_files=[str(lib)],
        files=[data],
        archives=[f"{env}#venv"],
        requirements=["six==1.16.0"],
        conf={"spark.master": "local[1]", "spark.ui.enabled": False},
        name="count",
        labels={"team": "data"},
        restart="fixed-delay",
        timeout="2h",
        env={"TZ": "UTC"},
        slots=2,
    )
    request = SubmitRequest.model_validate_json(made.body)
    spec = JobSpec.model_validate(request.spec)
    assert spec.job_id == "d.t.run-0123456789abcdef"
    assert spec.args == ["in", "3"]
    assert spec.spark_conf == {"spark.master": "local[1]", "spark.ui.enabled": "false"}
    assert spec.restart_strategy.kind == "fixed-delay"
    assert spec.timeout == 7200.0
    assert spec.env == {"TZ": "UTC"} and spec.slots == 2 and spec.labels == {"team": "data"}
    assert spec.requirements == ["six==1.16.0"]
    kinds = [(d.kind.value, d.filename, d.alias) for d in spec.dependencies]
    assert kinds == [
        ("py-file", "lib.py", None),
        ("file", "data.csv", None),
        ("archive", "env.tar.gz", "venv"),
    ]
    assert spec.dependencies[0].sha256 == hashlib.sha256(b"X = 1\n").hexdigest()
    assert request.artifact.filename == "app.py"
    assert base64.b64decode(request.artifact.data_b64) == pipeline(tmp_path).read_bytes()
    assert made.sha256 == hashlib.sha256(made.body).hexdigest()


def test_the_same_options_make_the_same_bytes_and_another_option_others(tmp_path: Path) -> None:
    options = {
        "job_id": "j",
        "application": pipeline(tmp_path),
        "conf": {"b": "2", "a": "1"},
        "labels": {"y": "1", "x": "2"},
    }
    first = build(**options)  # type: ignore[arg-type]
    again = build(**{**options, "conf": {"a": "1", "b": "2"}})  # type: ignore[arg-type]
    assert first.body == again.body
    changed = build(**{**options, "application_args": ["x"]})  # type: ignore[arg-type]
    assert changed.sha256 != first.sha256


def test_a_folder_is_zipped_the_same_way_whenever_it_is_zipped(tmp_path: Path) -> None:
    folder = tmp_path / "pipeline"
    (folder / "pkg").mkdir(parents=True)
    (folder / "main.py").write_text("def main(ctx):\n    return 1\n")
    (folder / "pkg" / "util.py").write_text("Y = 2\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"junk")
    first = build(job_id="j", application=folder)
    os.utime(folder / "main.py", (1, 1))
    again = build(job_id="j", application=folder)
    assert first.body == again.body
    artifact = json.loads(first.body)["artifact"]
    assert artifact["filename"] == "pipeline.zip"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"application": "missing.py"}, "does not exist"),
        ({"py_files": ["nope.py"]}, "py-file nope.py does not exist"),
        ({"restart": "sometimes"}, "kind must be one of"),
        ({"job_id": "../etc"}, "invalid Steward job id"),
    ],
)
def test_bad_options_are_a_clear_error_before_anything_is_sent(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    arguments: dict[str, object] = {"job_id": "j", "application": pipeline(tmp_path), **options}
    with pytest.raises(SubmissionError, match=message):
        build(**arguments)  # type: ignore[arg-type]


def test_the_proxy_user_is_passed_through(tmp_path: Path) -> None:
    made = build(job_id="d.t.run-1", application=pipeline(tmp_path), proxy_user="etl")
    spec = JobSpec.model_validate(SubmitRequest.model_validate_json(made.body).spec)
    assert spec.proxy_user == "etl"

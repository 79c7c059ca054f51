"""The Flink peer benchmark's own logic, without a Flink JVM.

benchmarks/flink_peer.py runs Flink's JobManagers for many minutes, so its full run is not a
test; these check what would silently skew its figures: the summary divides Steward by Flink
and judges the goal, the config written for a session carries that session and the HA keys,
the FLINK_HOME assembled from the two wheels has its scripts (executable) and jars where
Flink's scripts look for them, and replayed records are read right from the print sink.
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _flink  # noqa: E402
import flink_peer  # noqa: E402


def _trial(kind: str, seconds: float, **extra: object) -> dict[str, object]:
    return {"kind": kind, "seconds": seconds, **extra}


def _flink_trial(kind: str, seconds: float, replayed: int) -> dict[str, object]:
    return _trial(
        kind,
        seconds,
        restarted=True,
        restored_checkpoint=7,
        records_replayed=replayed,
        standby_asked=40,
        standby_answered=0,
        standby_last_leaderless_answer_after=None,
    )


def _session(peer: dict[str, object], steward: list[dict[str, object]]) -> dict[str, object]:
    return {
        "session": "4",
        "flink_session_seconds": 4.0,
        "steward_session_seconds": 4.0,
        "peer": peer,
        "steward": {"trials": steward},
    }


def test_summary_is_steward_over_flink_and_judges_the_goal() -> None:
    steward = [_trial("crash", s, restarted_attempts=0) for s in (1.0, 1.5, 9.0)]
    steward += [_trial("graceful", s, restarted_attempts=0) for s in (0.5, 0.6, 0.7)]
    peer = [_flink_trial("crash", s, 20) for s in (6.0, 6.5, 7.0)]
    peer += [_flink_trial("graceful", s, 40) for s in (0.2, 0.3, 0.4)]
    results = {"per_session": [_session({"trials": peer}, steward)]}

    rows = {row["figure"]: row for row in flink_peer.summarise(results)}

    crash = rows["crash failover (SIGKILL), session 4"]
    assert (crash["steward"], crash["peer"], crash["ratio"]) == (1.5, 6.5, 0.231)
    assert crash["met"] is True
    assert "restarted the job in 3/3" in crash["note"]
    assert "replayed 20 records" in crash["note"]
    assert "answered 0/120 requests before it showed the restarted job;" in crash["note"]
    graceful = rows["graceful failover (SIGTERM), session 4"]
    # Under its 1 s goal but slower than Flink: not met.
    assert (graceful["ratio"], graceful["met"]) == (2.0, False)


def test_summary_without_flink_keeps_stewards_figures_and_the_reason() -> None:
    steward = [_trial("crash", 3.0, restarted_attempts=1)]
    steward += [_trial("graceful", 0.5, restarted_attempts=0)]
    results = {
        "per_session": [_session({"error": "TimeoutError: no leader", "trials": []}, steward)]
    }

    rows = {row["figure"]: row for row in flink_peer.summarise(results)}

    crash = rows["crash failover (SIGKILL), session 4"]
    assert (crash["steward"], crash["peer"], crash["ratio"], crash["met"]) == (
        3.0,
        None,
        None,
        False,
    )
    assert "Flink failed: TimeoutError: no leader" in crash["note"]
    assert "Steward attempts restarted: 1" in crash["note"]
    assert rows["graceful failover (SIGTERM), session 4"]["met"] is True


def test_config_carries_the_session_and_the_ha_keys(tmp_path: Path) -> None:
    settings = _flink.flink_config("127.0.0.1:2181", tmp_path, 4000, root="/flink-x")

    assert settings["high-availability.zookeeper.client.session-timeout"] == "4000 ms"
    assert settings["high-availability.type"] == "zookeeper"
    assert settings["high-availability.zookeeper.quorum"] == "127.0.0.1:2181"
    assert settings["high-availability.zookeeper.path.root"] == "/flink-x"
    assert settings["high-availability.storageDir"] == (tmp_path / "ha").as_uri()
    assert settings["execution.checkpointing.interval"] == "1 s"
    # The default session is Flink's own: the key is left out, as in the shipped config.
    default = _flink.flink_config("127.0.0.1:2181", tmp_path, None, root="/flink-x")
    assert "high-availability.zookeeper.client.session-timeout" not in default


def test_config_yaml_is_written_into_the_clusters_conf_dir(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    for name in ("log4j-console.properties", "log4j-cli.properties", "logback-console.xml"):
        (home / "conf" / name).write_text("# shipped\n")
    (home / "conf" / "config.yaml").write_text(
        "env:\n  java:\n    opts:\n      all: --add-opens=x\n"
    )

    cluster = _flink.FlinkHA(tmp_path / "work", "127.0.0.1:2181", 6000, home=home)

    text = (cluster.conf_dir / "config.yaml").read_text()
    lines = dict(line.split(": ", 1) for line in text.splitlines() if not line.startswith("#"))
    parsed = {key: json.loads(value) for key, value in lines.items()}
    assert parsed["high-availability.zookeeper.client.session-timeout"] == "6000 ms"
    assert parsed["high-availability.zookeeper.path.root"] == cluster.root
    assert parsed["env.java.opts.all"] == "--add-opens=x"
    assert (cluster.conf_dir / "log4j-console.properties").exists()


def _wheel(path: Path, files: dict[str, tuple[bytes, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, mode) in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            archive.writestr(info, data)
    return path


def test_home_is_assembled_from_both_wheels_once(tmp_path: Path) -> None:
    scripts = _wheel(
        tmp_path / "apache_flink-9.9-cp311.whl",
        {
            "pyflink/bin/jobmanager.sh": (b"#!/bin/sh\n", 0o755),
            "pyflink/bin/config.sh": (b"#!/bin/sh\n", 0o755),
            "pyflink/conf/config.yaml": (b"a: 1\n", 0o644),
            "pyflink/table/ignored.py": (b"", 0o644),
        },
    )
    jars = _wheel(
        tmp_path / "apache_flink_libraries-9.9-py3.whl",
        {
            "pyflink/lib/flink-dist-9.9.jar": (b"jar", 0o664),
            "pyflink/opt/flink-sql-client-9.9.jar": (b"jar", 0o664),
            "pyflink/bin/jobmanager.sh": (b"not this one", 0o644),
        },
    )
    assert _flink.wheel_names(tmp_path) == (scripts, jars)
    home = tmp_path / "home"

    _flink.assemble_home([scripts, jars], home)

    assert (home / "bin" / "jobmanager.sh").read_bytes() == b"#!/bin/sh\n"
    assert os.access(home / "bin" / "jobmanager.sh", os.X_OK)
    assert (home / "conf" / "config.yaml").exists()
    assert (home / "lib" / "flink-dist-9.9.jar").read_bytes() == b"jar"
    assert (home / "opt" / "flink-sql-client-9.9.jar").exists()
    assert not (home / "table").exists()
    assert _flink.flink_version_of(home) == "9.9"
    # A second run reuses what the first assembled.
    (home / "conf" / "config.yaml").write_text("edited\n")
    _flink.assemble_home([scripts, jars], home)
    assert (home / "conf" / "config.yaml").read_text() == "edited\n"


def test_wheels_without_flink_dist_are_refused(tmp_path: Path) -> None:
    scripts = _wheel(tmp_path / "s.whl", {"pyflink/bin/jobmanager.sh": (b"", 0o755)})

    with pytest.raises(RuntimeError, match="flink-dist"):
        _flink.assemble_home([scripts], tmp_path / "home")
    assert not (tmp_path / "home" / ".assembled").exists()


def test_standby_answers_split_at_the_new_graph() -> None:
    old = {"start-time": 100, "state": "RUNNING"}
    answers = flink_peer.StandbyAnswers(100)

    seen = [
        answers.record(0.1, old),  # the dead leader's graph
        answers.record(0.2, None),
        answers.record(2.9, {}),  # an answer without the job
        answers.record(3.0, None),
        answers.record(4.0, {"start-time": 200, "state": "INITIALIZING"}),
        answers.record(4.1, old),  # a stale answer after the take-over is not "leaderless"
        answers.record(5.0, {"start-time": 200, "state": "CREATED"}),
        answers.record(6.0, {"start-time": 200, "state": "RUNNING"}),
    ]

    assert seen == [False] * 7 + [True]
    assert answers.summary() == {
        "standby_asked": 4,
        "standby_answered": 2,
        "standby_last_leaderless_answer_after": 2.9,
        "standby_leaderless_states": ["RUNNING", "NO JOB"],
        "new_graph_seen_after": 4.0,
        "states_before_running": ["INITIALIZING", "CREATED"],
    }


def test_replayed_records_are_the_fall_back_of_the_sequence() -> None:
    assert flink_peer.replayed_records([10, 11, 12, 13, 11, 12]) == 3
    assert flink_peer.replayed_records([10, 11, 12, 13, 14]) is None
    assert flink_peer.replayed_records([10, 11, 12, 12]) == 1


def test_printed_numbers_are_read_from_the_taskmanager_output(tmp_path: Path) -> None:
    log = tmp_path / "tm.out"
    log.write_bytes(
        b"INFO starting\nsteward-bench 1\nsteward-bench 2\n"
        b"2026 INFO steward-bench 3 in a log line\nsteward-bench 3\n"
    )
    cluster = _flink.FlinkHA.__new__(_flink.FlinkHA)
    cluster.taskmanagers = [_flink.FlinkProcess("tm", None, log)]  # type: ignore[arg-type]

    assert cluster.printed() == [1, 2, 3]


def test_leader_rest_port_is_read_from_the_connection_info() -> None:
    # Flink writes the leader's address with Java serialisation: the URL is plain inside.
    data = b"\xac\xed\x00\x05w\x1a\x00\x16http://127.0.0.1:41234sr\x00\x0ejava.util.UUID"
    assert _flink.rest_port_in(data) == 41234
    assert _flink.rest_port_in(b"") is None


def test_report_section_names_the_flink_measured_or_why_it_could_not_run() -> None:
    from _cluster_report import render_section

    row = {"figure": "crash failover (SIGKILL), session 4", "steward": 0.7, "peer": 7.5}
    row |= {"unit": "s", "ratio": 0.093, "goal": "< 2 s", "met": True, "note": ""}
    ran = {"peer": {"name": "Apache Flink JobManager HA", "version": "2.3.0", "obtained": "pip"}}
    failed = {"peer": {"name": "Apache Flink JobManager HA", "error": "pip download failed (1)"}}
    results = {
        "measured_at": "2026-11-21T11:00:00+00:00",
        "command": "run_all.py --suite cluster",
        "quick": False,
        "total_seconds": 1.0,
        "machine": {
            "cores": 2,
            "cpu": "x",
            "ram_gib": 23,
            "platform": "linux",
            "python": "3.11",
            "load_average_1m": 1.0,
        },
    }

    section = render_section(
        {**results, "benchmarks": {"flink_peer": {**ran, "summary": [row]}}}, "r.json", []
    )
    assert "### Flink peer" in section
    assert "Peer: Apache Flink JobManager HA 2.3.0 (pip)." in section
    assert "| 7.5 s | 0.09 |" in section
    section = render_section(
        {**results, "benchmarks": {"flink_peer": {**failed, "summary": []}}}, "r.json", []
    )
    assert "Flink could not run here: `pip download failed (1)`" in section


def test_logged_running_reads_the_new_leaders_log_after_the_signal(tmp_path: Path) -> None:
    job = "b1dc70adc4d3ffc2abe24032af0979e4"
    log = tmp_path / "jm.out"
    log.write_text(
        "2026-11-21 11:15:25,584 INFO ExecutionGraph [] - Job steward-bench-flink"
        f" ({job}) switched from state CREATED to RUNNING.\n"
        "2026-11-21 11:15:44,157 INFO ExecutionGraph [] - Job steward-bench-flink"
        f" ({job}) switched from state CREATED to RUNNING.\n"
        "2026-11-21 11:15:44,429 INFO ExecutionGraph [] - Source: numbers (1/1) (x)"
        " switched from INITIALIZING to RUNNING.\n"
    )
    signalled = datetime(2026, 11, 21, 11, 15, 41, 157000).timestamp()

    found = flink_peer.logged_running(log, job, signalled)

    assert found == {"log_job_running_after": 3.0, "log_task_running_after": 3.272}
    assert flink_peer.logged_running(log, "0" * 32, signalled)["log_job_running_after"] is None

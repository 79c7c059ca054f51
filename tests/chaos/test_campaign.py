"""A short seeded chaos campaign in the default run: real ZooKeeper ensemble, real JobManager
and TaskManager processes, faults injected while jobs run; every invariant must hold.

The assertions on the faults and jobs counted keep it from passing vacuously (a nemesis that
injected nothing, or a workload whose jobs never ran, would fail here).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from chaos.campaign import Campaign, CampaignSettings, main, parse_duration
from chaos.nemesis import FAILOVER_KINDS, NETWORK_KINDS
from chaos.workload import WorkloadSettings

pytestmark = pytest.mark.zookeeper


@pytest.mark.timeout(900)
def test_short_campaign_keeps_every_invariant(
    short_campaign: CampaignSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = Campaign(short_campaign, print).run()
    with capsys.disabled():
        print(json.dumps({k: v for k, v in summary.items() if k != "faults"}, indent=1))
    assert summary["violations"] == [], json.dumps(summary["violations"], indent=1)
    kinds = {kind for kind, count in summary["faults_by_kind"].items() if count}
    assert len(kinds) >= 4, summary["faults_by_kind"]
    if short_campaign.network:  # the network lane injected its faults too
        assert kinds & set(NETWORK_KINDS), summary["faults_by_kind"]
        assert summary["fault_errors"] == [], summary["fault_errors"]
    assert summary["faults_total"] >= 8, summary["faults_by_kind"]
    jobs = summary["jobs"]
    assert jobs["finished"] >= 10, jobs
    assert jobs["accepted"] == jobs["finished"] + jobs["failed"] + jobs["canceled"], jobs
    assert jobs["attempts"] >= jobs["finished"], jobs


# Slow (one to three minutes): the default run has each fault's own test instead,
# tests/e2e/cluster/test_s3_stalled_submission.py and
# tests/e2e/incidents/test_lost_submit_answer.py.
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_faults_around_failovers_keep_every_invariant(
    failover_campaign: CampaignSettings, capsys: pytest.CaptureFixture[str]
) -> None:
    """The storage stalled while the leader dies: the next leader waits it out (no job failed,
    none lost); a forward cut after the leader stored the job: the standby says
    outcome_unknown and the client's retry ends in success, for one job."""
    summary = Campaign(failover_campaign, print).run()
    _show(summary, capsys)
    assert summary["violations"] == [], json.dumps(summary["violations"], indent=1)
    _assert_failover_faults(summary)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_a_longer_campaign_with_faults_around_failovers_keeps_every_invariant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Five minutes of the faults around a failover among the leader's, a standby's, a
    TaskManager's and ZooKeeper's, on S3 (few kinds: each one is drawn several times)."""
    pytest.importorskip("moto", reason="the S3 server is moto's (the dev extra)")
    settings = CampaignSettings(
        storage="s3",
        kinds=FAILOVER_KINDS + ROUGH_KINDS,
        fault_cycle=True,
        seed=2033,
        duration=300.0,
        workdir=tmp_path / "campaign",
        fault_interval=5.0,
        workload=WorkloadSettings(in_flight=6, spark_share=0.0),
    )
    summary = Campaign(settings, print).run()
    _show(summary, capsys)
    assert summary["violations"] == [], json.dumps(summary["violations"], indent=1)
    _assert_failover_faults(summary)


ROUGH_KINDS = ("kill_leader", "freeze_leader", "kill_standby", "kill_taskmanager", "zk_stop")
"""What the longer campaign adds to the faults around a failover."""


def _show(summary: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(json.dumps({k: v for k, v in summary.items() if k != "faults"}, indent=1))
        print(json.dumps([f for f in summary["faults"] if f["kind"] in FAILOVER_KINDS]))


def _assert_failover_faults(summary: dict[str, Any]) -> None:
    """Each fault around a failover was injected and did what it says; no job failed."""
    assert all(summary["faults_by_kind"].get(kind) for kind in FAILOVER_KINDS), summary[
        "faults_by_kind"
    ]
    assert summary["fault_errors"] == [], summary["fault_errors"]
    assert summary["jobs"]["failed"] == 0, summary["jobs"]
    cuts = [f for f in summary["faults"] if f["kind"] == "forward_cut_after_store"]
    assert all(f["accepted"] for f in cuts), cuts
    # The cut landed where it should: a leader froze with the job stored, the standby said so
    assert any(f["frozen"] and f["answers"][0] == "504" for f in cuts), cuts
    assert all(f["answers"][-1] in ("201", "409") for f in cuts if f["frozen"]), cuts
    jobs = summary["jobs"]
    assert jobs["accepted"] == jobs["finished"] + jobs["canceled"], jobs


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90.0), ("90s", 90.0), ("30m", 1800.0), ("1.5h", 5400.0)]
)
def test_durations_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    "argv",
    [
        ["--seed", "1", "--duration", "ten minutes", "--out", "x.json"],
        ["--seed", "1", "--spark-share", "2", "--out", "x.json"],
        ["--seed", "1", "--jobmanagers", "0", "--out", "x.json"],
        ["--duration", "1m", "--out", "x.json"],
        ["--seed", "1", "--storage", "s3", "--network", "--out", "x.json"],
        ["--seed", "1", "--storage", "nfs", "--out", "x.json"],
    ],
)
def test_bad_arguments_are_a_clear_error_not_a_traceback(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_sigterm_stops_a_campaign_and_everything_it_started(tmp_path: Path) -> None:
    """A campaign killed the polite way (SIGTERM, as a CI timeout or `kill` does) leaves no
    process of its cluster running, and exits 130."""
    workdir = tmp_path / "campaign"
    tests = Path(__file__).resolve().parents[1]
    environ = {**os.environ, "PYTHONPATH": f"{tests}:{os.environ.get('PYTHONPATH', '')}"}
    # Faults every ~2 s (the default 8 s): the first one is on, and the campaign signalled,
    # a quarter as long after the cluster is up. The smallest cluster that still has every
    # kind of process (ZooKeeper servers, a JobManager, a TaskManager, attempts' runners) and
    # no Spark: 26 -> 12 CPU-s against the default shape.
    argv = [sys.executable, "-m", "chaos.campaign", "--seed", "5", "--duration", "5m"]
    argv += ["--fault-interval", "2", "--jobmanagers", "1", "--taskmanagers", "1"]
    argv += ["--spark-share", "0", "--in-flight", "2", "--kinds", "kill_taskmanager"]
    argv += ["--workdir", str(workdir), "--keep-workdir", "--out", str(tmp_path / "s.json")]
    campaign = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environ
    )
    try:
        assert campaign.stdout is not None
        for line in campaign.stdout:  # until a fault is on
            if "] fault " in line and "healed" not in line:
                break
        else:
            pytest.fail(f"the campaign ended first (exit {campaign.wait()})")
        assert _started_by(workdir), "no process of the campaign's cluster is running"
        campaign.send_signal(signal.SIGTERM)
        output, _ = campaign.communicate(timeout=120)
        left = _started_by(workdir)
    finally:
        campaign.kill()
        for pid in _started_by(workdir):  # never leak a cluster into the rest of the run
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()
    assert campaign.returncode == 130, output
    assert "interrupted: every process it started is stopped" in output
    assert left == []


def _started_by(workdir: Path) -> list[int]:
    """Processes whose command line names ``workdir`` (its ZooKeeper servers, JobManagers,
    TaskManagers and their attempts)."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if any(str(workdir) in part for part in process.info["cmdline"] or ()):
                found.append(process.info["pid"])
    return found

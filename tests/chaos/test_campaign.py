"""A short seeded chaos campaign in the default run: real ZooKeeper ensemble, real JobManager
and TaskManager processes, faults injected while jobs run; every invariant must hold.

The assertions on the faults and jobs counted keep it from passing vacuously (a nemesis that
injected nothing, or a workload whose jobs never ran, would fail here).
"""

from __future__ import annotations

import json

import pytest

from chaos.campaign import Campaign, CampaignSettings, main, parse_duration
from chaos.nemesis import NETWORK_KINDS

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
        ["--duration", "1m", "--out", "x.json"],
    ],
)
def test_bad_arguments_are_a_clear_error_not_a_traceback(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error:" in capsys.readouterr().err

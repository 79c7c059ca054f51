"""deploy/prometheus/: the alert rules pass their ``promtool test rules`` tests (and those
tests catch a rule that would page on a normal failover), every rule is tested, carries a
severity, a summary and a description, and names only metrics Steward defines; the example
Prometheus and Alertmanager configurations are valid. promtool and amtool come with Debian's
``prometheus`` and ``prometheus-alertmanager`` packages (scripts/setup.sh installs them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from test_dashboard import defined_names, metric_names

DEPLOY = Path(__file__).parents[3] / "deploy" / "prometheus"
RULES = DEPLOY / "steward-alerts.yml"
RULE_TESTS = DEPLOY / "steward-alerts.test.yml"
SEVERITIES = {"critical", "warning"}
REQUIRED = {
    "StewardNoLeader",
    "StewardLeaderFlapping",
    "StewardJobManagerDown",
    "StewardTaskManagerDown",
    "StewardJobsFailing",
    "StewardJobsWaitingForSlots",
    "StewardZooKeeperLostWrites",
    "StewardDoctorFoundErrors",
    "StewardStorageErrors",
}


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} not found: scripts/setup.sh installs Debian's prometheus packages"
    return found


def run(*argv: str, cwd: Path = DEPLOY) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_the_rules_pass_their_promtool_tests() -> None:
    checked = run(tool("promtool"), "check", "rules", RULES.name)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = run(tool("promtool"), "test", "rules", RULE_TESTS.name)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_the_rule_tests_catch_a_no_leader_alert_that_fires_on_a_failover(tmp_path: Path) -> None:
    shutil.copy(RULE_TESTS, tmp_path)
    text = RULES.read_text(encoding="utf-8")
    hasty = text.replace("        for: 30s\n", "        for: 0s\n", 1)
    assert hasty != text
    (tmp_path / RULES.name).write_text(hasty, encoding="utf-8")

    tested = run(tool("promtool"), "test", "rules", RULE_TESTS.name, cwd=tmp_path)

    assert tested.returncode != 0
    assert (
        "a failover (one scrape without a leader) raises nothing" in tested.stdout + tested.stderr
    )


def test_each_rule_has_a_severity_a_summary_and_a_description() -> None:
    found = rules()
    assert {rule["alert"] for rule in found} >= REQUIRED
    for rule in found:
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert rule["annotations"]["summary"].strip(), rule["alert"]
        assert len(rule["annotations"]["description"]) > 60, rule["alert"]


def test_every_rule_is_shown_firing_by_a_promtool_test() -> None:
    document = yaml.safe_load(RULE_TESTS.read_text(encoding="utf-8"))
    fired = {
        case["alertname"]
        for test in document["tests"]
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    assert fired == {rule["alert"] for rule in rules()}


def test_every_metric_the_rules_name_is_defined() -> None:
    named = {name for rule in rules() for name in metric_names(rule["expr"])}
    assert "steward_jobmanager_is_leader" in named
    unknown = named - defined_names()
    assert not unknown, f"the alert rules name metrics no registry defines: {sorted(unknown)}"


def test_the_example_prometheus_and_alertmanager_configurations_are_valid() -> None:
    # --syntax-only: the example's token and CA files exist on a real Prometheus host only
    prometheus = run(tool("promtool"), "check", "config", "--syntax-only", "prometheus.yml")
    assert prometheus.returncode == 0, prometheus.stdout + prometheus.stderr
    alertmanager = run(tool("amtool"), "check-config", "alertmanager.yml")
    assert alertmanager.returncode == 0, alertmanager.stdout + alertmanager.stderr
    scrape = yaml.safe_load((DEPLOY / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = {job["job_name"] for job in scrape["scrape_configs"]}
    assert jobs == {"steward-jobmanager", "steward-taskmanager"}  # the rules select on them
    assert scrape["rule_files"] == [RULES.name]

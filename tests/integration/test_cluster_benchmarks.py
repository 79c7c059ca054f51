"""The cluster benchmarks keep working: their report renders any summary; a quick run works.

The rendering test is fast and needs nothing running: it feeds the report a document in the
``summary`` contract every cluster benchmark (and the ones other scripts add later) prints.
The quick run starts real ZooKeeper, JobManager and TaskManager processes for each script,
which takes minutes on a loaded machine: it is marked slow.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support import run_benchmark

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _cluster import replayed_ticks  # noqa: E402
from _cluster_report import render_section, write_cluster_section  # noqa: E402
from _common import summary_row  # noqa: E402
from footprint import breakdown  # noqa: E402

OWN = ("cluster_failover", "failover_reads", "recovery_scaling", "submission", "footprint")


def _results(benchmarks: dict[str, object]) -> dict[str, object]:
    return {
        "suite": "cluster",
        "measured_at": "2026-01-01T00:00:00+00:00",
        "command": "benchmarks/run_all.py --suite cluster",
        "quick": False,
        "total_seconds": 1.0,
        "machine": {
            "cores": 2,
            "cpu": "cpu",
            "ram_gib": 1.0,
            "platform": "linux",
            "python": "3.11",
            "load_average_1m": 1.0,
        },
        "load_average_1m_at_end": 2.0,
        "benchmarks": benchmarks,
        "skipped": {"job_start": "benchmarks/job_start.py does not exist yet"},
    }


def test_report_renders_summary_rows_of_any_benchmark(tmp_path: Path) -> None:
    row = summary_row(
        "warm start", 1.234, "s", goal="< 1.5 s", met=True, note="median of 3", peer=2.468
    )
    assert row["ratio"] == 0.5
    failing = summary_row("overhead", 1.2, "ratio", goal="< 1.05", met=False)
    results = _results(
        {
            "a_new_benchmark": {"benchmark": "a_new_benchmark", "summary": [row, failing]},
            "broken": {"benchmark": "broken", "error": "exit code 1", "summary": []},
        }
    )
    section = render_section(results, "../benchmarks/results/cluster.json", [])
    assert "1 of 2 goals met" in section
    assert "| warm start | 1.234 s | 2.468 s | 0.50 | < 1.5 s | yes | median of 3 |" in section
    assert "| overhead | 1.2 ratio |  |  | < 1.05 | **no** |  |" in section
    assert "**Failed in this run:** `exit code 1`" in section
    assert "Not measured: benchmarks/job_start.py does not exist yet." in section

    page = tmp_path / "performance.md"
    page.write_text("# Performance\n\n## Foundation layer\n\nkept\n\n## Cluster\n\nOLD-FIGURES\n")
    write_cluster_section(page, results, "cluster.json", [])
    text = page.read_text()
    assert "## Foundation layer\n\nkept\n" in text
    assert "OLD-FIGURES" not in text
    assert text.count("## Cluster") == 1


def test_replayed_ticks_counts_ticks_a_later_attempt_wrote_again(tmp_path: Path) -> None:
    truth = tmp_path / "truth.log"
    lines = ["start 1 10", "tick 1 1", "tick 1 2", "start 2 11", "tick 2 1", "tick 2 2", "tick 2 3"]
    truth.write_text("\n".join(lines) + "\n")
    assert replayed_ticks(truth) == 2
    truth.write_text("start 1 10\ntick 1 1\ntick 1 2\ntick 1 3\n")
    assert replayed_ticks(truth) == 0


def test_footprint_breakdown_counts_what_each_job_added_per_znode_kind() -> None:
    root = "/steward-bench/footprint"
    before = {root: (24, 0), f"{root}/jobs": (29, 0), f"{root}/leader/info": (36, 60)}
    after = {**before, f"{root}/leader/info": (36, 60)}
    for n in range(2):
        job = f"footprint-{n:03d}"
        after[f"{root}/jobs/{job}"] = (43, 0)
        after[f"{root}/jobs/{job}/status"] = (50, 300 + 10 * n)

    found = breakdown(before, after, jobs=2)

    assert found["zk_per_job_znodes"] == {
        f"{root}/jobs/<job-id>": {
            "znodes_per_job": 1.0,
            "path_bytes": 43.0,
            "data_bytes": 0.0,
            "bytes_per_job": 43.0,
        },
        f"{root}/jobs/<job-id>/status": {
            "znodes_per_job": 1.0,
            "path_bytes": 50.0,
            "data_bytes": 305.0,
            "bytes_per_job": 355.0,
        },
    }
    assert found["zk_tree_bytes_per_job"] == 398.0


@pytest.mark.slow
@pytest.mark.zookeeper
def test_quick_cluster_suite_prints_every_own_figure(tmp_path: Path) -> None:
    figures = run_benchmark(
        "run_all.py",
        "--suite",
        "cluster",
        "--quick",
        "--only",
        ",".join(OWN),
        "--out-dir",
        str(tmp_path),
        timeout=900,
    )
    for key in OWN:
        doc = figures["benchmarks"][key]
        assert "error" not in doc, doc
        assert doc["summary"], key
        assert all(row["steward"] is not None for row in doc["summary"]), doc["summary"]
    page = (tmp_path / "performance.md").read_text()
    assert "## Cluster" in page
    assert (tmp_path / "img" / "cluster-cluster_failover.png").exists()

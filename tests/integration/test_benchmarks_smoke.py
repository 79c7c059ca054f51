"""The benchmarks keep working: a quick run of all of them prints one JSON document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import steward
from support import run_benchmark


# Slow (about 30 s): the cluster, peer and script benchmarks keep their own smoke tests in the
# default suite; this one runs the whole foundation suite at quick size.
@pytest.mark.slow
@pytest.mark.zookeeper
def test_quick_benchmark_run_prints_every_figure(tmp_path: Path) -> None:
    figures = run_benchmark("run_all.py", "--quick", "--out-dir", str(tmp_path), timeout=240)
    assert {"leader_failover", "fenced_writes", "job_graph_store", "zk_reads"} <= set(
        figures["benchmarks"]
    )


@pytest.mark.zookeeper
def test_quick_fair_share_run_starts_the_second_team_s_jobs_and_prints_the_figures() -> None:
    # A real JobManager, simulated TaskManagers whose attempts hold a slot 1.5 s: the second
    # queue's jobs all start while the first queue's backlog still waits.
    doc = run_benchmark("fair_share.py", "--quick", timeout=240)
    results = doc["results"]
    assert len(results["b_wait_turnovers"]) == results["b_jobs"]
    assert results["a_started"] < results["a_jobs"]
    assert 0.0 < results["shares"]["b"] < 1.0
    assert {row["unit"] for row in doc["summary"]} == {"slot turnovers", "points", "ms CPU"}


def test_quick_record_decode_run_measures_both_encodings_of_one_record() -> None:
    # In-process, no ZooKeeper: a second. The benchmark itself fails if either encoding reads
    # back another record, or if a corrupt record is read.
    doc = run_benchmark("record_decode.py", "--quick", timeout=120)
    results = doc["results"]
    assert results["bytes_after"] < results["bytes_before"]
    assert min(results["decode_before_us"], results["decode_after_us"]) > 0
    assert results["json_loads_us"] > 0
    assert results["bytes_format_2"] < results["bytes_after"] * 3 // 5
    assert results["decode_format_2_us"] > 0
    assert {row["unit"] for row in doc["summary"]} == {"us CPU"}


@pytest.mark.zookeeper
def test_quick_footprint_run_counts_zookeeper_bytes_per_job_at_both_record_formats() -> None:
    # Real processes (2 JobManagers, a TaskManager, 3 ticking jobs), once per record format,
    # each on its own ZooKeeper. Bytes, not time: the goal holds on a loaded machine too.
    doc = run_benchmark("footprint.py", "--quick", timeout=400)
    results = doc["results"]
    now, before = results, results["record_format_1"]
    assert now["zk_approximate_data_size_bytes_per_job"] == now["zk_tree_bytes_per_job"]
    assert now["zk_approximate_data_size_bytes_per_job"] < 600  # issue 22's goal
    assert before["zk_approximate_data_size_bytes_per_job"] > 600
    status = next(v for k, v in now["zk_per_job_znodes"].items() if k.endswith("/status"))
    old_status = next(v for k, v in before["zk_per_job_znodes"].items() if k.endswith("/status"))
    assert status["data_bytes"] < old_status["data_bytes"] - 100
    assert {row["figure"] for row in doc["summary"]} >= {
        "ZooKeeper bytes per running job",
        "ZooKeeper bytes per running job, record format 1",
    }


@pytest.fixture(scope="module")
def startup_cost() -> dict[str, Any]:
    """One quick startup_cost run for the two tests below: fresh interpreters import each entry
    point, from this tree and alternated with a baseline source, and a real JobManager and
    TaskManager start. (Two runs, one of them --no-processes, imported this tree's entry points
    twice and started a ZooKeeper each: about 9 CPU-s more.)"""
    # The baseline is this very tree: the comparison runs, whatever its figures. No warm-up:
    # its imports (one per entry point and source, unmeasured) were 14 of the run's 28 fresh
    # interpreters, and a smoke wants no stable figure.
    source = str(Path(steward.__file__).resolve().parents[1])
    return run_benchmark(
        "startup_cost.py",
        *("--quick", "--rounds", "1", "--no-warm-up", "--baseline-src", source),
        timeout=420,
    )


@pytest.mark.zookeeper
@pytest.mark.timeout(600)  # the shared run counts in whichever runs first
def test_quick_startup_cost_run_prints_each_entry_point_s_cpu_and_its_ratio(
    startup_cost: dict[str, Any],
) -> None:
    doc = startup_cost
    imports, processes = doc["results"]["imports"], doc["results"]["processes"]
    for name in ("interpreter", "frameworks", "cli", "jobmanager", "taskmanager", "runner"):
        assert imports[name]["median_cpu_s"] > 0
    # The interpreter alone is the floor every entry point stands on.
    assert imports["jobmanager"]["median_cpu_s"] > imports["interpreter"]["median_cpu_s"]
    assert processes["jobmanager_ready"]["n"] == processes["taskmanager_registered"]["n"] == 1
    assert all(row["steward"] > 0 for row in doc["summary"])


@pytest.mark.zookeeper
@pytest.mark.timeout(600)  # the shared run counts in whichever runs first
def test_startup_cost_with_a_baseline_source_measures_its_imports_beside_this_trees(
    startup_cost: dict[str, Any],
) -> None:
    doc = startup_cost
    baseline = doc["results"]["imports_baseline"]

    assert baseline.keys() == doc["results"]["imports"].keys()
    assert all(figure["n"] == 1 and figure["median_cpu_s"] > 0 for figure in baseline.values())
    compared = [row for row in doc["summary"] if "over the baseline" in row["figure"]]
    assert len(compared) == 5


def test_quick_http_stack_run_measures_every_stack_against_h11() -> None:
    # In-process servers and one client process, no ZooKeeper: seconds.
    doc = run_benchmark("http_stack.py", "--quick", timeout=120)
    results = doc["results"]
    assert set(results) == {"h11_asyncio", "httptools_asyncio", "steward_httptools_uvloop"}
    assert all(stack["server_cpu_us_per_request"] > 0 for stack in results.values())
    assert results["h11_asyncio"]["cpu_ratio_to_h11_asyncio"] == 1.0
    assert {row["unit"] for row in doc["summary"]} == {"ratio"}


def test_quick_warm_footprint_run_measures_what_a_standby_holds_a_job() -> None:
    # In-process, no ZooKeeper: a second. The decoded models outweigh their znodes.
    doc = run_benchmark("warm_footprint.py", "--quick", timeout=120)
    (point,) = doc["results"]["points"]
    assert point["jobs"] == 50
    assert point["bytes_per_job"] > point["znode_bytes_per_job"] > 0
    assert {row["unit"] for row in doc["summary"]} == {"MiB"}
    assert doc["benchmark"] == "warm_footprint" and doc["measured_at"]

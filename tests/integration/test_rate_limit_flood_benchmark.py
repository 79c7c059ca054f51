"""The rate-limit flood benchmark keeps working: a quick run prints its JSON document, and the
figure it exists for holds (the failure counters stay within their bound under a flood of
distinct addresses, where limits' own in-memory storage keeps them all)."""

from __future__ import annotations

from support import run_benchmark


def test_quick_rate_limit_flood_benchmark_prints_its_figures() -> None:
    document = run_benchmark("rate_limit_flood.py", "--quick", timeout=240)
    ours = document["results"]["steward"]
    theirs = document["results"]["limits_memory_storage"]
    assert ours["counters_held"] == document["parameters"]["max_keys"] == 5_000
    assert theirs["counters_held"] == 2 * document["parameters"]["requests"]
    memory = document["summary"][0]
    assert memory["figure"].startswith("memory") and memory["met"] is True

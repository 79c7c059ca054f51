"""Run every benchmark of a suite, keep their JSON, and publish the figures.

``--suite foundation`` (the default) runs each benchmark of :data:`SUITE` in turn as its own
process (with ``--quick`` when given ``--quick``; ``fenced_writes`` twice, with ZooKeeper's
data on disk and on tmpfs), collects the documents into ``benchmarks/results/foundation.json``,
rewrites the "## Foundation layer" section of ``docs/performance.md`` (the rest of the file is
kept) and, if matplotlib is importable, draws ``docs/img/foundation.png``.

``--suite cluster`` runs :data:`CLUSTER_SUITE` the same way into
``benchmarks/results/cluster.json``, the "## Cluster" section and ``docs/img/cluster*.png``.
Its scripts each print a document with a ``summary`` list (see ``_common.summary_row``) that
the report renders generically; a script that does not exist is skipped with a note, and one
that fails is recorded with its error while the others still run. ``--only a,b`` runs some of
a suite's benchmarks; with ``--merge`` their documents replace those of the same benchmarks in
the stored results and the rest is kept (each document carries its own ``measured_at``). The
collected document is also printed on stdout.

``--quick`` writes to ``benchmarks/results/quick/`` instead (git-ignored), so a smoke run never
replaces the published figures; ``--out-dir DIR`` puts all three outputs flat into DIR.
``--render-only`` re-renders the docs and the plot from the stored JSON without measuring.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from _cluster_report import draw_cluster_plots, write_cluster_section
from _common import Json, machine, parser, progress, run_main, source
from _report import draw_plot, write_section

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@dataclass(frozen=True)
class Benchmark:
    """One entry of the suite: its key in the results, its script and the script's options."""

    key: str
    script: str
    options: tuple[str, ...] = ()
    timeout: float | None = None
    """Seconds after which this script is stopped (None: the suite's ``--script-timeout``)."""


SUITE = (
    Benchmark("leader_failover", "leader_failover"),
    Benchmark("fenced_writes", "fenced_writes"),
    Benchmark("fenced_writes_tmpfs", "fenced_writes", ("--tmpfs",)),
    Benchmark("job_graph_store", "job_graph_store"),
    Benchmark("doctor_cost", "doctor_cost"),
    # ZooKeeper reads one by one, pipelined and by multiRead (--quick: 1,000 znodes, 2 rounds).
    Benchmark("zk_reads", "zk_reads"),
)
CLUSTER_SUITE = (
    Benchmark("cluster_failover", "cluster_failover"),
    Benchmark("failover_floor", "failover_floor"),
    Benchmark("failover_reads", "failover_reads"),
    # 2,000 jobs queued on 2 slots, 3 crashes: every job listed through the new leader.
    Benchmark("failover_listing", "failover_listing"),
    Benchmark("recovery_scaling", "recovery_scaling"),
    # 10,000 jobs on 1,000 simulated TaskManagers: ~15 min on a loaded 2-core machine.
    Benchmark("failover_scale", "failover_scale", timeout=3600.0),
    # What a warm standby holds a live job (decoded records, tracemalloc): seconds, no processes.
    Benchmark("warm_footprint", "warm_footprint"),
    # 100 and 300 simulated TaskManagers over bare HTTP: ~5 min on a loaded 2-core machine.
    Benchmark("heartbeat_cost", "heartbeat_cost", timeout=1800.0),
    Benchmark("submission", "submission"),
    Benchmark("footprint", "footprint"),
    Benchmark("job_start", "job_start"),
    Benchmark("spark_peer", "spark_peer"),
    # Flink JVMs on 2 cores: ~6 min measured (sessions 4 s and 60 s, 3 repeats); a loaded
    # machine or a first run (a 330 MB download) needs more.
    Benchmark("flink_peer", "flink_peer", timeout=1800.0),
    Benchmark("pipeline_overhead", "pipeline_overhead"),
    Benchmark("script_submit", "script_submit"),
    Benchmark("security_cost", "security_cost"),
    Benchmark("rate_limit_flood", "rate_limit_flood"),
    Benchmark("wait_cost", "wait_cost"),
    Benchmark("log_stream", "log_stream"),
    Benchmark("ui_cost", "ui_cost"),
    Benchmark("fair_share", "fair_share"),
    Benchmark("scheduling_pass", "scheduling_pass"),
    Benchmark("record_decode", "record_decode"),
    Benchmark("http_stack", "http_stack"),
    Benchmark("content_gc", "content_gc"),
    Benchmark("log_retention", "log_retention"),
    Benchmark("result_store", "result_store"),
    Benchmark("job_listing", "job_listing"),
    Benchmark("watch_reconnect", "watch_reconnect"),
    Benchmark("liveness_probe", "liveness_probe"),
    Benchmark("startup_cost", "startup_cost"),
)
SUITES = {"foundation": SUITE, "cluster": CLUSTER_SUITE}
CHILD_STOP_TIMEOUT = 60.0


@dataclass(frozen=True)
class Outputs:
    results: Path
    docs: Path
    image: Path


def outputs(out_dir: Path | None, quick: bool, suite: str = "foundation") -> Outputs:
    if out_dir is None and not quick:
        docs = REPO / "docs"
        return Outputs(HERE / "results" / f"{suite}.json", docs / "performance.md", docs / "img")
    flat = out_dir or HERE / "results" / "quick"
    return Outputs(flat / f"{suite}.json", flat / "performance.md", flat / "img")


def run_script(benchmark: Benchmark, flags: list[str], timeout: float | None = None) -> Json:
    """Run one benchmark; its stderr passes through, its stdout is the JSON document.

    After ``timeout`` seconds the script is stopped (SIGTERM: it cleans up) and this fails.
    """
    command = [sys.executable, str(HERE / f"{benchmark.script}.py"), *benchmark.options, *flags]
    progress(f"running {benchmark.key}")
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        stdout, _ = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.terminate()
        child.communicate(timeout=CHILD_STOP_TIMEOUT)
        raise RuntimeError(f"{benchmark.key} did not finish within {timeout:g}s") from None
    except BaseException:
        # Ctrl-C or SIGTERM: let the child stop its ZooKeeper and contenders itself.
        child.terminate()
        child.wait(timeout=CHILD_STOP_TIMEOUT)
        raise
    if child.returncode != 0:
        raise RuntimeError(f"{benchmark.key} failed with exit code {child.returncode}")
    doc: Json = json.loads(stdout)
    return doc


def shown_command() -> str:
    """The command line as typed from the repository root (with PYTHONPATH if it was set)."""
    try:
        python = str(Path(sys.executable).relative_to(REPO))
    except ValueError:
        python = sys.executable
    path = os.environ.get("PYTHONPATH")
    prefix = f"PYTHONPATH={shlex.quote(path)} " if path else ""
    return prefix + shlex.join([python, *sys.argv])


def measure(
    quick: bool, verbose: bool, suite: str = "foundation", only: str = "", timeout: float = 0
) -> Json:
    started = time.monotonic()
    load = machine()  # before the suite loads the machine itself
    flags = [flag for flag, on in (("--quick", quick), ("--verbose", verbose)) if on]
    chosen = [b for b in SUITES[suite] if not only or b.key in only.split(",")]
    skipped: dict[str, str] = {}
    benchmarks: dict[str, Json] = {}
    for benchmark in chosen:
        if suite == "foundation":
            benchmarks[benchmark.key] = run_script(benchmark, flags)
            continue
        if not (HERE / f"{benchmark.script}.py").exists():
            skipped[benchmark.key] = f"benchmarks/{benchmark.script}.py does not exist yet"
            progress(f"skipping {benchmark.key}: {skipped[benchmark.key]}")
            continue
        benchmarks[benchmark.key] = run_tolerant(benchmark, flags, timeout or None)
    extra: Json = {"skipped": skipped} if suite != "foundation" else {}
    return {
        "suite": suite,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shown_command(),
        "quick": quick,
        "total_seconds": round(time.monotonic() - started, 1),
        "machine": load,
        "load_average_1m_at_end": machine()["load_average_1m"],
        "steward": source(),
        "benchmarks": benchmarks,
        **extra,
    }


def merged(stored: Json, fresh: Json) -> Json:
    """``fresh`` with the stored documents of the benchmarks it did not run."""
    benchmarks = {**stored.get("benchmarks", {}), **fresh["benchmarks"]}
    skipped = {
        key: why
        for key, why in {**stored.get("skipped", {}), **fresh.get("skipped", {})}.items()
        if key not in benchmarks
    }
    return {**fresh, "benchmarks": benchmarks, "skipped": skipped, "merged": True}


def run_tolerant(benchmark: Benchmark, flags: list[str], timeout: float | None) -> Json:
    """Run one cluster benchmark; a failure is recorded in its place, not raised."""
    started = time.monotonic()
    try:
        doc = run_script(benchmark, flags, benchmark.timeout or timeout)
    except (RuntimeError, ValueError) as exc:
        progress(f"{benchmark.key} failed: {exc}")
        return {"benchmark": benchmark.key, "error": str(exc), "summary": []}
    doc.setdefault("wall_seconds", round(time.monotonic() - started, 1))
    return doc


def publish(results: Json, where: Outputs, *, fresh: bool) -> None:
    """Write the docs section and the plot. Without matplotlib, a plot of earlier figures is
    removed after a new measurement (``fresh``) and kept by a re-render of the same ones."""
    if results.get("suite") == "cluster":
        publish_cluster(results, where)
        return
    image = where.image / "foundation.png"
    if draw_plot(results, image):
        progress(f"plot: {image}")
    elif fresh and image.exists():
        image.unlink()
        progress(f"matplotlib is not importable: removed the plot of earlier figures {image}")
    else:
        progress("matplotlib is not importable: no plot drawn")
    base = where.docs.parent
    link = os.path.relpath(image, base) if image.exists() else None
    write_section(where.docs, results, os.path.relpath(where.results, base), link)
    progress(f"docs: {where.docs}")


def publish_cluster(results: Json, where: Outputs) -> None:
    base = where.docs.parent
    images = draw_cluster_plots(results, where.image)
    if images is None:
        progress("matplotlib is not importable: no plots drawn")
        images = []
    links = [os.path.relpath(image, base) for image in images]
    write_cluster_section(where.docs, results, os.path.relpath(where.results, base), links)
    progress(f"docs: {where.docs}")


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--out-dir", type=Path, default=None, help="write all outputs into DIR")
    cli.add_argument(
        "--render-only", action="store_true", help="re-render docs and plot from stored JSON"
    )
    cli.add_argument("--suite", choices=sorted(SUITES), default="foundation")
    cli.add_argument("--only", default="", help="comma-separated benchmark keys of the suite")
    cli.add_argument(
        "--merge", action="store_true", help="keep the stored results of benchmarks not run"
    )
    cli.add_argument(
        "--script-timeout",
        type=float,
        default=3600.0,
        help="cluster suite: seconds after which one script is stopped and recorded as failed",
    )
    args = cli.parse_args()
    where = outputs(args.out_dir, args.quick, args.suite)

    def body() -> Json:
        if args.render_only:
            results: Json = json.loads(where.results.read_text(encoding="utf-8"))
        else:
            results = measure(args.quick, args.verbose, args.suite, args.only, args.script_timeout)
            if args.merge and where.results.exists():
                results = merged(json.loads(where.results.read_text(encoding="utf-8")), results)
            where.results.parent.mkdir(parents=True, exist_ok=True)
            where.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            progress(f"results: {where.results}")
        publish(results, where, fresh=not args.render_only)
        return results

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())

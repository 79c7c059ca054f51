"""Start-up cost: the CPU a Steward process spends before it does its work.

A test run starts hundreds of JobManagers, TaskManagers and runners (``python -m steward.cli
jobmanager|taskmanager``, ``python -m steward.runtime.runner``), and a standby that takes over
has paid its imports already or not at all: what each one costs to start is CPU the machine
does not spend on the work. Two measures, each in fresh processes, as user+system CPU seconds
(not wall time: a loaded machine stretches wall time, hardly the CPU a process uses):

- imports: ``python -c "import ..."`` of each entry point's modules (what a process imports
  before its first line of work), ``--rounds`` times in rotated order, median reported (the
  child's own rusage once imported, its exit left out), after one unmeasured import of each
  that writes the bytecode the next ones read (none with ``--no-warm-up``);
- processes: a real JobManager (``steward.testing.processes``, against a temporary ZooKeeper)
  from its start to answering ``/readyz`` 200 as the leader, and a TaskManager from its start
  to being listed by that leader, ``--starts`` times each; the process's CPU when it got there.

Baselines measured in the same run: ``python -c pass`` (the interpreter) and ``import
pydantic, fastapi`` (the frameworks a JobManager cannot do without); each entry point is
reported as the ratio of its median over the frameworks' median, which a busier or faster
machine moves much less than the seconds.

``--baseline-src DIR`` (e.g. ``git archive <commit> src | tar -x -C /tmp/base``, then
``/tmp/base/src``) measures each entry point's imports from that source tree too, each
fresh import of one alternated with one of the other: ``imports_baseline`` and a row per entry
point with this tree's median over the baseline's, the before/after of a change on one machine
under one load.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys

import psutil

from _cluster import BenchCluster, bench_cluster
from _common import (
    Json,
    TempZooKeeper,
    cluster_document,
    parser,
    progress,
    rotated,
    run_main,
    summary_row,
    temp_zookeeper,
    wait_until,
)
from steward.testing.processes import Proc

BASELINE = "frameworks"
IMPORTS: dict[str, str] = {
    "interpreter": "pass",
    BASELINE: "import pydantic, fastapi",
    "cli": "import steward.cli.main",
    "jobmanager": "import steward.cli.main, steward.cli.jobmanager, steward.jobmanager.manager",
    "taskmanager": "import steward.cli.main, steward.cli.taskmanager, steward.taskmanager.manager",
    "runner": "import steward.runtime.runner",
    "client": "import steward.cli.main, steward.cli.jobs",
}
"""What each entry point imports before its first line of work, as ``python -c`` code."""

ENTRY_POINTS = ("jobmanager", "taskmanager", "runner", "cli", "client")
START_TIMEOUT = 120.0


_REPORT = (
    "\nimport resource as _r\n"
    "_u = _r.getrusage(_r.RUSAGE_SELF)\n"
    "print(_u.ru_utime + _u.ru_stime, flush=True)\n"
)
"""Appended to each import: the child reports its own CPU once imported (not its exit's,
which spends a few hundred ms freeing modules that a server pays only when it stops)."""


_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
"""The children's environment: they may write their bytecode, as an installed Steward has it
(pip compiles it); with none cached, each start compiles Steward's sources again (about 0.35 s
CPU more for a JobManager)."""


def import_cpu(code: str, source: str | None = None) -> float:
    """User+system CPU seconds of a fresh ``python -c code`` (this interpreter, this path, or
    with ``source`` first on ``PYTHONPATH``)."""
    env = _ENV if source is None else {**_ENV, "PYTHONPATH": source}
    child = subprocess.run(
        [sys.executable, "-c", code + _REPORT],
        stdin=subprocess.DEVNULL,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise RuntimeError(f"python -c {code!r} failed: {child.stderr[-2000:]}")
    return float(child.stdout.split()[-1])


def measure_imports(
    rounds: int, baseline: str | None = None, *, warm_up: bool = True
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each entry point's import CPU from this tree, and (``baseline``: a source folder) from
    that one, each import of one next to the other's, in alternating order; after one import
    of each, not measured, if ``warm_up``."""
    sources = [None] if baseline is None else [None, baseline]
    for code in IMPORTS.values() if warm_up else ():  # writes the bytecode the next ones read
        for source in sources:
            import_cpu(code, source)
    seconds: dict[str, list[float]] = {name: [] for name in IMPORTS}
    before: dict[str, list[float]] = {name: [] for name in IMPORTS} if baseline else {}
    for index in range(rounds):
        for name in rotated(list(IMPORTS), index):
            for source in rotated(sources, index):
                (seconds if source is None else before)[name].append(
                    import_cpu(IMPORTS[name], source)
                )
        progress(f"imports round {index + 1}/{rounds} done")
    return seconds, before


def process_cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def measure_processes(zookeeper: TempZooKeeper, starts: int) -> dict[str, list[float]]:
    """CPU of ``starts`` JobManagers to serving leader, then of ``starts`` TaskManagers to
    listed by the last of them (each stopped before the next starts)."""
    seconds: dict[str, list[float]] = {"jobmanager_ready": [], "taskmanager_registered": []}
    with bench_cluster(zookeeper.workdir, zookeeper.connect_string, "startup", 4.0) as cluster:
        leader = None
        for index in range(starts):
            if leader is not None:
                _stop(leader)
            leader = cluster.start_jobmanager(f"jm-{index}")
            wait_until(lambda p=leader: _ready(cluster, p), START_TIMEOUT, "a serving leader")
            seconds["jobmanager_ready"].append(process_cpu(leader.pid))
        assert leader is not None
        for index in range(starts):
            tm = cluster.start_taskmanager(f"tm-{index}", slots=1)
            wait_until(
                lambda t=tm.id: _listed(cluster, leader, t), START_TIMEOUT, "TaskManager listed"
            )
            seconds["taskmanager_registered"].append(process_cpu(tm.pid))
            _stop(tm)
        progress(f"process starts done: {seconds}")
    return seconds


def _ready(cluster: BenchCluster, proc: Proc) -> bool:
    cluster.check_alive()
    return cluster.serving_leader(proc)


def _listed(cluster: BenchCluster, leader: Proc, tm_id: str) -> bool:
    cluster.check_alive()
    view = cluster.view_of(leader)
    return bool(view) and any(tm.get("id") == tm_id for tm in view["taskmanagers"])


def _stop(proc: Proc) -> None:
    proc.signal(signal.SIGTERM)
    proc.popen.wait(60)


def medians(seconds: dict[str, list[float]]) -> Json:
    return {
        name: {
            "median_cpu_s": round(statistics.median(values), 3),
            "min_cpu_s": round(min(values), 3),
            "n": len(values),
        }
        for name, values in seconds.items()
    }


def rows(results: Json) -> list[Json]:
    imports, base = results["imports"], results["imports"][BASELINE]["median_cpu_s"]
    out = [
        summary_row(
            f"{name} imports, CPU over import pydantic, fastapi",
            imports[name]["median_cpu_s"] / base,
            "ratio",
            goal="",
            met=None,
            note=f"{imports[name]['median_cpu_s']:.3f} s CPU; frameworks {base:.3f} s",
        )
        for name in ENTRY_POINTS
    ]
    for name, figure in results.get("imports_baseline", {}).items():
        if name in ENTRY_POINTS:
            now = imports[name]["median_cpu_s"]
            out.append(
                summary_row(
                    f"{name} imports, CPU over the baseline source's",
                    now / figure["median_cpu_s"],
                    "ratio",
                    goal="",
                    met=None,
                    note=f"{figure['median_cpu_s']:.3f} -> {now:.3f} s CPU",
                )
            )
    for name, figure in results.get("processes", {}).items():
        out.append(
            summary_row(
                f"{name.replace('_', ' ')}: CPU of the process",
                figure["median_cpu_s"],
                "s CPU",
                goal="",
                met=None,
                note=f"ratio to the frameworks' import {figure['median_cpu_s'] / base:.2f}",
            )
        )
    return out


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--rounds", type=int, default=None, help="fresh imports of each entry")
    cli.add_argument("--starts", type=int, default=None, help="processes of each kind started")
    cli.add_argument("--no-processes", action="store_true", help="imports only (no ZooKeeper)")
    cli.add_argument(
        "--baseline-src", default=None, help="a source folder whose imports to alternate with"
    )
    cli.add_argument(
        "--no-warm-up",
        action="store_true",
        help="no unmeasured import first (a smoke run; or the bytecode is written already)",
    )
    args = cli.parse_args()
    parameters: Json = {
        "rounds": args.rounds or (3 if args.quick else 9),
        "starts": args.starts or (1 if args.quick else 5),
        "processes": not args.no_processes,
        "baseline_src": args.baseline_src,
        "warm_up": not args.no_warm_up,
        "python": sys.executable,
        "pythonpath": os.environ.get("PYTHONPATH", ""),
    }

    def body() -> Json:
        with temp_zookeeper("startup") as zookeeper:
            now, before = measure_imports(
                parameters["rounds"], args.baseline_src, warm_up=parameters["warm_up"]
            )
            results: Json = {"imports": medians(now)}
            if before:
                results["imports_baseline"] = medians(before)
            if parameters["processes"]:
                results["processes"] = medians(measure_processes(zookeeper, parameters["starts"]))
            progress(f"results: {results}")
            return cluster_document("startup_cost", parameters, results, rows(results), zookeeper)

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())

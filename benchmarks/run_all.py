"""Run every foundation benchmark, keep their JSON, and publish the figures.

Runs each benchmark of :data:`SUITE` in turn as its own process (with ``--quick`` when given
``--quick``; ``fenced_writes`` twice, with ZooKeeper's data on disk and on tmpfs), collects the
documents into ``benchmarks/results/foundation.json``, rewrites the "## Foundation layer"
section of ``docs/performance.md`` (the rest of the file is kept) and, if matplotlib is
importable, draws ``docs/img/foundation.png``. The collected document is also printed on
stdout.

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


SUITE = (
    Benchmark("leader_failover", "leader_failover"),
    Benchmark("fenced_writes", "fenced_writes"),
    Benchmark("fenced_writes_tmpfs", "fenced_writes", ("--tmpfs",)),
    Benchmark("job_graph_store", "job_graph_store"),
)
CHILD_STOP_TIMEOUT = 60.0


@dataclass(frozen=True)
class Outputs:
    results: Path
    docs: Path
    image: Path


def outputs(out_dir: Path | None, quick: bool) -> Outputs:
    if out_dir is None and not quick:
        docs = REPO / "docs"
        return Outputs(HERE / "results" / "foundation.json", docs / "performance.md", docs / "img")
    flat = out_dir or HERE / "results" / "quick"
    return Outputs(flat / "foundation.json", flat / "performance.md", flat / "img")


def run_script(benchmark: Benchmark, flags: list[str]) -> Json:
    """Run one benchmark; its stderr passes through, its stdout is the JSON document."""
    command = [sys.executable, str(HERE / f"{benchmark.script}.py"), *benchmark.options, *flags]
    progress(f"running {benchmark.key}")
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        stdout, _ = child.communicate()
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


def measure(quick: bool, verbose: bool) -> Json:
    started = time.monotonic()
    load = machine()  # before the suite loads the machine itself
    flags = [flag for flag, on in (("--quick", quick), ("--verbose", verbose)) if on]
    benchmarks = {benchmark.key: run_script(benchmark, flags) for benchmark in SUITE}
    return {
        "suite": "foundation",
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shown_command(),
        "quick": quick,
        "total_seconds": round(time.monotonic() - started, 1),
        "machine": load,
        "load_average_1m_at_end": machine()["load_average_1m"],
        "steward": source(),
        "benchmarks": benchmarks,
    }


def publish(results: Json, where: Outputs, *, fresh: bool) -> None:
    """Write the docs section and the plot. Without matplotlib, a plot of earlier figures is
    removed after a new measurement (``fresh``) and kept by a re-render of the same ones."""
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


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--out-dir", type=Path, default=None, help="write all outputs into DIR")
    cli.add_argument(
        "--render-only", action="store_true", help="re-render docs and plot from stored JSON"
    )
    args = cli.parse_args()
    where = outputs(args.out_dir, args.quick)

    def body() -> Json:
        if args.render_only:
            results: Json = json.loads(where.results.read_text(encoding="utf-8"))
        else:
            results = measure(args.quick, args.verbose)
            where.results.parent.mkdir(parents=True, exist_ok=True)
            where.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
            progress(f"results: {where.results}")
        publish(results, where, fresh=not args.render_only)
        return results

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())

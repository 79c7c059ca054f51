"""What every foundation benchmark shares: a throwaway ZooKeeper, timing, statistics, output.

Each benchmark script is run on its own (``python benchmarks/<name>.py``). It starts a
standalone managed ZooKeeper in a temporary directory on a free port, prints ONE JSON document
on stdout and its progress on stderr, and stops the ZooKeeper on the way out, also after an
error, a Ctrl-C or a SIGTERM (:func:`run_main` turns SIGTERM into ``SystemExit``, and ignores
further signals so that the cleanup runs to its end).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import psutil

import steward
from steward.testing import waiting
from steward.testing.spark import http_json as http_json  # noqa: PLC0414 (re-export)
from steward.testing.zookeeper import start_ensemble
from steward.zookeeper.fourletter import four_letter_word
from steward.zookeeper.managed import ManagedEnsemble

T = TypeVar("T")
Json = dict[str, Any]

# Debian's build reports "3.8.0-${mvngit.commit.id}, built on ...": keep the release only.
_ZK_VERSION = re.compile(r"^Zookeeper version: (\d+(?:\.\d+)*)", re.MULTILINE)


# ------------------------------------------------------------------------------ ZooKeeper


@dataclass(frozen=True)
class TempZooKeeper:
    """A standalone ZooKeeper that lives as long as one benchmark run."""

    ensemble: ManagedEnsemble
    client_port: int
    workdir: Path
    """The temporary directory: ZooKeeper's data under ``zookeeper/``, the rest is free."""

    @property
    def connect_string(self) -> str:
        return self.ensemble.connect_string

    def four_letter(self, word: str) -> str:
        return four_letter_word(self.client_port, word, timeout=2.0)

    def version(self) -> str:
        match = _ZK_VERSION.search(self.four_letter("srvr"))
        return match.group(1) if match else "unknown"

    def monitor(self) -> dict[str, str]:
        """The server's ``mntr`` answer as key -> value."""
        pairs = (line.split("\t", 1) for line in self.four_letter("mntr").splitlines())
        return {pair[0]: pair[1] for pair in pairs if len(pair) == 2}


TMPFS = Path("/dev/shm")


@contextmanager
def temp_zookeeper(name: str, base: Path | None = None) -> Iterator[TempZooKeeper]:
    """Start a 1-server ZooKeeper in a fresh temporary directory (under ``base`` if given, e.g.
    :data:`TMPFS`); stop it and delete the directory after."""
    with tempfile.TemporaryDirectory(prefix=f"steward-bench-{name}-", dir=base) as tmp:
        workdir = Path(tmp)
        data_dir = workdir / "zookeeper"
        try:
            ensemble = start_ensemble(data_dir, servers=1)
            port = ensemble.client_ports[1]
            zookeeper = TempZooKeeper(ensemble, port, workdir)
            progress(f"ZooKeeper {zookeeper.version()} serving on 127.0.0.1:{port} in {workdir}")
            yield zookeeper
        finally:
            ManagedEnsemble(data_dir).stop()
            progress("ZooKeeper stopped")


# ------------------------------------------------------------------------------ timing


def wait_until(
    predicate: Callable[[], T | None], timeout: float, what: str, interval: float = 0.01
) -> T:
    """The kit's :func:`steward.testing.waiting.wait_until` polling every 10 ms by default (the
    resolution of the measured times); a ``TimeoutError`` after ``timeout``."""
    return waiting.wait_until(predicate, timeout, what, interval)


def timed(action: Callable[[], object]) -> float:
    """Seconds ``action()`` took (monotonic, high resolution)."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def summary(values: Sequence[float], digits: int = 4) -> Json:
    """min / median / mean / max of ``values``, rounded."""
    return {
        "n": len(values),
        "min": round(min(values), digits),
        "median": round(statistics.median(values), digits),
        "mean": round(statistics.fmean(values), digits),
        "max": round(max(values), digits),
    }


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (``fraction`` in 0..1) of ``values``."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(fraction * len(ordered)) - 1))
    return ordered[rank]


def rotated(items: Sequence[T], round_index: int) -> list[T]:
    """``items`` rotated left by ``round_index``: across len(items) rounds each item runs once
    in each position, which cancels a steady drift (page cache, JIT, log file growth)."""
    shift = round_index % len(items)
    return [*items[shift:], *items[:shift]]


# ------------------------------------------------------------------------------ output


def progress(message: str) -> None:
    """One line of progress on stderr (stdout carries only the JSON document)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine() -> Json:
    """What the figures were measured on."""
    memory = psutil.virtual_memory().total
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "ram_gib": round(memory / 2**30, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        # Other work on the machine shows up in the figures: say how busy it was.
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or "unknown"
    match = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else platform.processor() or "unknown"


def source() -> Json:
    """Which Steward was measured: its package directory and, from a git checkout, the commit
    and whether the package has changes not committed (read-only git commands only)."""
    package = Path(steward.__file__).resolve().parent
    info: Json = {"path": str(package)}
    try:
        commit = _git(package, "rev-parse", "--short", "HEAD")
        changes = _git(package, "status", "--porcelain", "--untracked-files=all", "--", ".")
    except (OSError, subprocess.CalledProcessError):
        return info
    return {**info, "commit": commit, "uncommitted_changes": bool(changes)}


def _git(directory: Path, *args: str) -> str:
    command = ["git", "--no-optional-locks", "-C", str(directory), *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def filesystem_of(path: Path) -> str:
    """The filesystem type holding ``path`` (ZooKeeper fsyncs its log there on every write)."""
    best = ("", "unknown")
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        if str(path).startswith(mount) and len(mount) > len(best[0]):
            best = (mount, part.fstype)
    return best[1]


def process_document(name: str, parameters: Json, results: Json, summary: list[Json]) -> Json:
    """The JSON document of a benchmark that measures in-process and starts no ZooKeeper:
    :func:`document`'s fields less ZooKeeper's, and its ``summary`` rows."""
    return {
        "benchmark": name,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "parameters": parameters,
        "results": results,
        "summary": summary,
        "environment": machine(),
        "steward": source(),
    }


def document(name: str, parameters: Json, results: Json, zookeeper: TempZooKeeper) -> Json:
    """The JSON document a benchmark prints."""
    return {
        "benchmark": name,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "parameters": parameters,
        "results": results,
        "environment": {
            **machine(),
            "zookeeper": zookeeper.version(),
            "zookeeper_data_fs": filesystem_of(zookeeper.workdir),
        },
        "steward": source(),
    }


def emit(doc: Json) -> None:
    json.dump(doc, sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------ entry point


def parser(description: str | None) -> argparse.ArgumentParser:
    """An argument parser with the ``--quick`` and ``--verbose`` options every script takes."""
    first = (description or "").strip().split("\n\n")[0]
    result = argparse.ArgumentParser(description=first)
    result.add_argument(
        "--quick", action="store_true", help="a small smoke-sized run (seconds, not minutes)"
    )
    result.add_argument("--verbose", action="store_true", help="Steward's INFO logs on stderr")
    return result


def run_main(body: Callable[[], Json], verbose: bool = False) -> int:
    """Run ``body`` and print its document. Ctrl-C and SIGTERM unwind through the cleanup."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        emit(body())
    except KeyboardInterrupt:
        progress("interrupted")
        return 130
    return 0


def _interrupt(signum: int, _frame: object) -> None:
    # A second Ctrl-C (or run_all's SIGTERM after the terminal's SIGINT) must not break off
    # the cleanup that this first one starts: ignore both from now on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


# ------------------------------------------------------------------------------ cluster suite


def summary_row(
    figure: str,
    steward_value: float | None,
    unit: str,
    *,
    goal: str,
    met: bool | None,
    note: str = "",
    peer: float | None = None,
    digits: int = 3,
) -> Json:
    """One row of a cluster benchmark's ``summary``: the contract the report renders.

    ``ratio`` is Steward's figure over the peer's when both are known; ``met`` is None when
    the figure has no goal (or could not be measured).
    """
    value = None if steward_value is None else round(steward_value, digits)
    ratio = None
    if steward_value is not None and peer:
        ratio = round(steward_value / peer, 3)
    return {
        "figure": figure,
        "steward": value,
        "peer": peer,
        "unit": unit,
        "ratio": ratio,
        "goal": goal,
        "met": met,
        "note": note,
    }


def cluster_document(
    name: str, parameters: Json, results: Json, rows: list[Json], zookeeper: TempZooKeeper
) -> Json:
    """The JSON document a cluster benchmark prints: :func:`document` plus its ``summary``."""
    return {**document(name, parameters, results, zookeeper), "summary": rows}


def job_counts(
    given: str | None, quick: bool, quick_counts: str, counts: str = "1000,10000"
) -> list[int]:
    """The job counts a scaling benchmark measures: ``--jobs`` if given, else its defaults."""
    return [int(n) for n in (given or (quick_counts if quick else counts)).split(",")]


def run_per_job_count(
    name: str,
    parameters: Json,
    measure: Callable[[TempZooKeeper, int, Json], Json],
    rows: Callable[[Json], list[Json]],
    verbose: bool,
) -> int:
    """Measure each of ``parameters["jobs"]`` on one temporary ZooKeeper and print the document."""

    def body() -> Json:
        with temp_zookeeper(name.replace("_", "-")) as zookeeper:
            results = {str(n): measure(zookeeper, n, parameters) for n in parameters["jobs"]}
            return cluster_document(name, parameters, results, rows(results), zookeeper)

    return run_main(body, verbose)


# ------------------------------------------------------------------------------ peers


@dataclass
class PeerProcess:
    """One JVM of a peer system (a Spark or Flink daemon) in its own process group, its output
    in ``log``. Their launch scripts exec the JVM, so the pid is the JVM's."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.popen.pid, signum)

    def kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(10)

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

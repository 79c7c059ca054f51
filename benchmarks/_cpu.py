"""CPU seconds used by process trees during a run, by role.

A run's processes come and go (a runner and its JVM live only as long as their attempt), so
:class:`CpuSampler` polls the trees under a set of root pids every ``interval`` seconds from a
thread and keeps, for every process it has seen, its first and last user+system CPU times.
Once stopped, the totals say how the machine's CPU went: to Spark's JVM, to Python, to
Steward's own control plane. A process's CPU after its last sample is lost, so the figures are
a lower bound by at most one interval of each short-lived process's life.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import psutil

JAVA = "spark JVM"
"""The role of every JVM below a root (a root keeps its own role: ZooKeeper is a JVM too)."""


@dataclass
class _Seen:
    role: str
    first: float
    last: float


@dataclass
class CpuSampler:
    """Sample the CPU of the trees under ``roots`` while in its ``with`` block.

    ``roots`` maps a pid to two roles: the root's own, and that of its descendants other than
    JVMs (a TaskManager's runners, a JobManager's hook processes); descendant JVMs are
    :data:`JAVA`.
    """

    roots: Mapping[int, tuple[str, str]]
    interval: float = 0.2
    _seen: dict[tuple[int, float], _Seen] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _primed: bool = False

    def __enter__(self) -> CpuSampler:
        self.sample()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        for pid, (role, child_role) in self.roots.items():
            try:
                root = psutil.Process(pid)
                tree = [(root, role)] + [
                    (child, _role_of(child, child_role)) for child in root.children(recursive=True)
                ]
            except psutil.Error:
                continue
            for process, process_role in tree:
                try:
                    with process.oneshot():
                        times = process.cpu_times()
                        key = (process.pid, process.create_time())
                except psutil.Error:
                    continue
                used = times.user + times.system
                seen = self._seen.get(key)
                if seen is None:
                    # A process born after the first sample used all its CPU within the run.
                    first = 0.0 if self._primed else used
                    self._seen[key] = _Seen(process_role, first, used)
                else:
                    seen.last = used
        self._primed = True

    def seconds_by_role(self) -> dict[str, float]:
        """CPU seconds used by each role while sampled."""
        totals: dict[str, float] = {}
        for seen in self._seen.values():
            totals[seen.role] = totals.get(seen.role, 0.0) + seen.last - seen.first
        return {role: round(value, 2) for role, value in sorted(totals.items())}


def _role_of(process: psutil.Process, otherwise: str) -> str:
    try:
        return JAVA if process.name() == "java" else otherwise
    except psutil.Error:
        return otherwise

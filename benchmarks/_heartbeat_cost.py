"""The leader's CPU for the heartbeats of simulated TaskManagers (``failover_scale.py``).

CPU seconds of the leader process (user + system, from ``/proc`` through psutil), which the
machine's other load inflates far less than wall time: over a window of heartbeats, less the
leader's CPU over as long a window with the heartbeats paused.
"""

from __future__ import annotations

import time

import psutil

from _common import Json, wait_until
from _tm_simulator import TaskManagerSimulator
from steward.testing.processes import Proc

SETTLED = 0.05
"""A leader below this share of a core with no heartbeat has finished its recovery's work."""


def heartbeat_cost(proc: Proc, simulator: TaskManagerSimulator, window: float) -> Json:
    """The leader's CPU for heartbeats: over ``window`` seconds of heartbeats, less its CPU
    over ``window`` seconds with the heartbeats paused (its own timers, probes and pings),
    measured before and after the busy window; the smaller is taken, since work left over
    from recovery (the first record watches, the job index) can still run in the first."""
    settled = _settle(proc, simulator)
    idle_before, elapsed_before = _idle_over(proc, simulator, window)
    # Every TaskManager beats again, and (idle holds) has had a whole hold answered: its first
    # poll after the pause is answered only a hold later, which the window must not start in.
    time.sleep(simulator.interval + (simulator.idle_hold or 0.0))
    unchanged = simulator.tally.unchanged
    busy, beats, elapsed = _cpu_over(proc, simulator, window)
    unchanged = simulator.tally.unchanged - unchanged
    idle_after, elapsed_after = _idle_over(proc, simulator, window)
    idle_rate = min(idle_before / elapsed_before, idle_after / elapsed_after)
    used = max(busy - idle_rate * elapsed, 0.0)
    per_beat = used / max(beats, 1)
    return {
        "window_s": round(elapsed, 2),
        "heartbeats": beats,
        "heartbeats_per_s": round(beats / elapsed, 1),
        "heartbeats_per_tm_s": round(beats / elapsed / len(simulator.taskmanagers), 3),
        "idle_hold_s": simulator.idle_hold,
        "unchanged_sent": unchanged,
        "cpu_s": round(busy, 3),
        "idle_cpu_s": [round(idle_before, 3), round(idle_after, 3)],
        "settle_s": round(settled, 1),
        "core_share": round(used / elapsed, 4),
        "cpu_us_per_heartbeat": round(per_beat * 1e6, 1),
        # What the simulated TaskManagers would cost at the default interval, had the
        # simulator (one process on a shared machine) sent every heartbeat on time.
        "core_share_at_interval": round(
            per_beat * len(simulator.taskmanagers) / simulator.interval, 4
        ),
    }


def _settle(proc: Proc, simulator: TaskManagerSimulator, most: float = 180.0) -> float:
    """Seconds until the leader, heartbeats paused, uses under :data:`SETTLED` of a core over
    two seconds: after a recovery its record watches and job index read every job once more
    (about a minute for 5,000 jobs at a load of 20), which no heartbeat figure should carry."""
    started = time.monotonic()
    while time.monotonic() - started < most:
        idle, elapsed = _idle_over(proc, simulator, 2.0)
        if idle / elapsed < SETTLED:
            break
    return time.monotonic() - started


def _idle_over(proc: Proc, simulator: TaskManagerSimulator, window: float) -> tuple[float, float]:
    """``proc``'s CPU seconds over ``window`` with the heartbeats paused, and the window."""
    simulator.paused = True
    time.sleep(simulator.interval)  # the loop sees the pause (it looks every tenth of it)
    # The held long polls end within their hold (an idle one's: the idle hold).
    hold = max(simulator.interval, simulator.idle_hold or 0.0)
    wait_until(lambda: simulator.in_flight == 0, hold + 10.0, "the held heartbeats answered")
    idle, _beats, elapsed = _cpu_over(proc, simulator, window)
    simulator.paused = False
    return idle, elapsed


def _cpu_over(
    proc: Proc, simulator: TaskManagerSimulator, window: float
) -> tuple[float, int, float]:
    """``proc``'s CPU seconds (user + system) and the heartbeats answered over ``window``."""
    process = psutil.Process(proc.pid)
    cpu, answered, started = process.cpu_times(), simulator.tally.answered, time.monotonic()
    time.sleep(window)  # a measuring window, not a synchronisation
    after = process.cpu_times()
    used = (after.user - cpu.user) + (after.system - cpu.system)
    return used, simulator.tally.answered - answered, time.monotonic() - started

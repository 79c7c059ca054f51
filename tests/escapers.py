"""Processes that escape an attempt's process group, for the containment tests.

``DOUBLE_FORK`` is a Python program that starts ``sleep 1000`` the way a daemon does: fork,
``setsid`` in the child (a new session and process group), fork again, the middle process
exits, so the sleeper is an orphan in a session of its own; it writes its pid to ``argv[1]``
(atomically) before it execs. ``ESCAPER`` is a pipeline that runs it, reports the sleeper's
pid as progress (``escaped``) and then waits for its gate file (``args[1]``) if it has one.

Import as ``from escapers import ...`` (tests/ is on sys.path through its conftest).
"""

from __future__ import annotations

import contextlib
import os
import signal

import psutil

DOUBLE_FORK = """
import os, sys
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        path = sys.argv[1]
        with open(path + ".tmp", "w") as out:
            out.write(str(os.getpid()))
        os.rename(path + ".tmp", path)
        os.execvp("sleep", ["sleep", "1000"])
    os._exit(0)
os.wait()
"""

ESCAPER = f"""
import os
import subprocess
import sys
import time

DOUBLE_FORK = {DOUBLE_FORK!r}

def main(ctx):
    pid_file = ctx.args[0]
    subprocess.run([sys.executable, "-c", DOUBLE_FORK, pid_file], check=True)
    while not os.path.exists(pid_file):
        time.sleep(0.02)
    escaped = int(open(pid_file).read())
    ctx.report_progress(escaped=escaped, runner=os.getpid())
    while len(ctx.args) > 1 and not os.path.exists(ctx.args[1]):
        time.sleep(0.02)
    return {{"escaped": escaped}}
"""


def escaped_from(pid: int, runner: int) -> bool:
    """``pid`` runs in another session and process group than the runner ``runner``."""
    return os.getsid(pid) != os.getsid(runner) and os.getpgid(pid) != os.getpgid(runner)


def kill_sleepers(pids: list[int]) -> None:
    """SIGKILL those of ``pids`` that are still sleepers (a test's clean-up, whatever it did)."""
    for pid in pids:
        with contextlib.suppress(psutil.Error, OSError):
            if psutil.Process(pid).name() == "sleep":
                os.kill(pid, signal.SIGKILL)

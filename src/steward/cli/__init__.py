"""The ``steward`` command, and the entry point of every process it starts (JobManager,
TaskManager, a cluster's nodes).

Importing httpx imports its own command-line tool (``httpx._main``) too whenever click, rich and
pygments are installed, as they are with Steward: about 0.15 s of CPU in every process that talks
HTTP (each JobManager and TaskManager, most commands; benchmarks/startup_cost.py), for a tool
Steward never runs. This package owns its process, so before anything imports httpx it puts a
stand-in in that module's place; a library user importing ``steward.client`` in their own process
is not affected.
"""

from __future__ import annotations

import sys
import types


def _httpx_cli_not_loaded() -> None:
    raise SystemExit("httpx's command line is not loaded in a Steward process")


if "httpx" not in sys.modules:
    _stand_in = types.ModuleType("httpx._main")
    _stand_in.main = _httpx_cli_not_loaded  # type: ignore[attr-defined]
    sys.modules.setdefault("httpx._main", _stand_in)

"""The audit log: one JSON line per submit, cancel, token create and revoke, and UI sign-in
through the sign-on provider.

Each line says what was done (``action``), to what (``target``), by whom (``who``, ``role``,
``token_id``: the token's public id, never the token), from where (``from``: the client's
address), when (``at``, Unix seconds) and how it ended (``outcome``: ``ok``, ``denied``, or the
HTTP status of a refusal). The lines go to the logger ``steward.audit`` (so the JobManager's
log has them at any verbosity) and, with ``security.audit.file``, to that file as well.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from .identity import Identity

LOGGER = "steward.audit"
log = logging.getLogger(LOGGER)
log.setLevel(logging.INFO)


def configure(path: Path | None) -> None:
    """Also append the audit lines to ``path`` (once per path, for the whole process)."""
    if path is None:
        return
    target = str(path.absolute())
    if any(getattr(h, "baseFilename", None) == target for h in log.handlers):
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(target, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(handler)


def record(
    action: str,
    who: Identity | None,
    *,
    client: str | None,
    outcome: str = "ok",
    **target: Any,
) -> None:
    """Log one audited action as a JSON line."""
    line: dict[str, Any] = {
        "audit": action,
        "at": round(time.time(), 3),
        "who": who.name if who else None,
        "role": str(who.role) if who else None,
        "token_id": who.token_id if who else None,
        "from": client,
        "target": target,
        "outcome": outcome,
    }
    log.info("%s", json.dumps(line, sort_keys=True, default=str))

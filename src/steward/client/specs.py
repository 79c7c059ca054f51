"""The JobSpec fields of one ``Client.submit``: its options in the order every try sends them.

A submission's body is hashed to recognise a retry of itself (:mod:`steward.client.submission`),
so the fields are laid out the same way every time: ``job_id``, ``args``, the restart strategy,
then the options given, in the caller's order. Checked here, before any request is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from steward.client import packaging
from steward.client.responses import checked_spec
from steward.wire.jobs import RestartStrategy


def submit_spec(
    path: Path,
    args: Sequence[str],
    job_id: str | None,
    restart: RestartStrategy | Mapping[str, Any] | None,
    optional: Mapping[str, Any],
) -> dict[str, Any]:
    """The checked spec of ``path``'s job (an id made from its name when None); the options
    that are None take the server's defaults. :class:`JobRejectedError` when it is wrong."""
    spec: dict[str, Any] = {
        "job_id": job_id if job_id is not None else packaging.default_job_id(path),
        "args": list(args),
    }
    if restart is not None:
        spec["restart_strategy"] = (
            restart.model_dump(mode="json") if isinstance(restart, BaseModel) else restart
        )
    spec.update({key: value for key, value in optional.items() if value is not None})
    return checked_spec(spec)

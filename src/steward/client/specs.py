"""What one ``Client.submit`` sends: its pipeline packaged, its options as JobSpec fields in
the order every try sends them, checked before any request is made.

A submission's body is hashed to recognise a retry of itself (:mod:`steward.client.submission`),
so the fields are laid out the same way every time: ``job_id``, ``args``, the restart strategy,
then the options given, in the caller's order.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from steward.client import job_files, packaging, submission
from steward.client.job_files import LocalFile
from steward.client.packaged import Pipelines
from steward.client.responses import checked_spec
from steward.client.submission import Submission
from steward.wire.jobs import RestartStrategy
from steward.wire.notifications import target_fields

_AS_FIELD: dict[str, Callable[[Any], Any]] = {
    "requirements": lambda given: job_files.requirement_lines(given) or None,
    "timeout": lambda given: given.total_seconds() if isinstance(given, timedelta) else given,
    "env": lambda env: dict(env) if env else None,
    "notifications": lambda targets: [target_fields(t) for t in targets] or None,
}
"""The options given in another form than their JobSpec field's (the rest are sent as given)."""


def submit_body(
    pipelines: Pipelines, path: Path, files: Mapping[str, Sequence[Any]], given: Mapping[str, Any]
) -> tuple[Submission, list[LocalFile]]:
    """The submission of ``path``'s job and the local files it names (``files``: by
    :func:`job_files.collect`'s option). ``given``: ``Client.submit``'s ``job_id``, ``args``,
    ``restart`` and then its options by JobSpec field name (``notifications`` its ``notify``).
    :class:`JobRejectedError` when one is wrong."""
    artifact = pipelines.packaged(path)
    local = job_files.collect(**files)
    options = dict(given)
    head = (options.pop("args"), options.pop("job_id"), options.pop("restart"))
    fields = {key: _AS_FIELD.get(key, _as_given)(value) for key, value in options.items()}
    fields["dependencies"] = [f.dependency.model_dump(mode="json") for f in local] or None
    spec = submit_spec(path, *head, fields)
    return submission.prepare(spec, *artifact.fields), local


def raw_body(spec: Mapping[str, Any], filename: str, data: bytes) -> Submission:
    """``spec`` and the artifact's bytes as they are; only a missing ``job_id`` is made."""
    spec = dict(spec)
    spec.setdefault("job_id", packaging.default_job_id(filename))
    return submission.prepare(spec, filename, base64.b64encode(data).decode("ascii"))


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


def _as_given(value: Any) -> Any:
    return value

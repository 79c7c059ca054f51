"""The leader's own refusals, which carry a stored record (see :mod:`steward.errors`)."""

from __future__ import annotations

from steward.errors import StewardError
from steward.wire.records import JobResultEntry


class JobResultExistsError(StewardError):
    """The job already has a result (``result``); the leader neither submits nor cancels it."""

    def __init__(self, result: JobResultEntry) -> None:
        super().__init__(f"job {result.job_id!r} has already terminated: {result.state.value}")
        self.result = result

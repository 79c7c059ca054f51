"""The client's error that carries a REST view (see :mod:`steward.errors` for the tree)."""

from __future__ import annotations

from steward.errors import ApiError, JobRejectedError
from steward.wire.rest import ResultView


class JobTerminatedError(ApiError):
    """The job already terminated (it has a result), so it cannot be submitted or cancelled."""

    def __init__(self, message: str, *, result: ResultView | None, status: int = 409) -> None:
        super().__init__(message, status=status, code="job_terminated")
        self.result = result


class MissingContentsError(JobRejectedError):
    """The leader refused a submission naming a file it does not hold (``missing_contents``):
    removed by its content collector since this client last uploaded or asked about it."""

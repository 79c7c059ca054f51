"""``POST /v1/jobs/batch``: many submissions in one request, and one answer per submission.

Each item is the body of a ``POST /v1/jobs`` (:class:`~steward.wire.rest.SubmitRequest`) and is
stored as that route would store it, with the same checks, submitter and audit; the batch saves
the HTTP request and model parsing per job, and its items share the leader's group commits.
The answer keeps the items' order. A submission is identified, for a retry, by the SHA-256 of
its item serialised alone (``SubmitRequest.model_dump_json()``): the same digest a ``POST
/v1/jobs`` of that item carries, so a batch retried, or a job submitted singly and then in a
batch, is recognised as the same submission.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from steward.wire.rest import ErrorBody, JobView
from steward.wire.values import JsonValue, Value


class BatchSubmitRequest(Value):
    """``POST /v1/jobs/batch``: up to :data:`MAX_BATCH` submissions, each the body of a ``POST
    /v1/jobs`` (:class:`SubmitRequest`), read one by one: an invalid item is refused alone."""

    submissions: list[dict[str, JsonValue]] = Field(min_length=1)


class ItemOutcome(StrEnum):
    CREATED = "created"
    """Stored now (``status`` 201)."""
    EXISTS = "exists"
    """Stored by an earlier submission of these very bytes (``status`` 200): a retry."""
    REFUSED = "refused"
    """Not stored by this request: ``error`` says why (``status`` as ``POST /v1/jobs``'s)."""


class BatchItemResult(Value):
    """What became of one submission of a batch."""

    job_id: str | None = Field(description="the job's id (None if the item had none and failed)")
    outcome: ItemOutcome
    status: int = Field(description="the status POST /v1/jobs would have answered: 201, 200 …")
    job: JobView | None = None
    error: ErrorBody | None = None


class BatchSubmitResponse(Value):
    """One result per submission, in the request's order."""

    results: list[BatchItemResult]
    served_by: str

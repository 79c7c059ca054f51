"""``Client.submit_many``: many jobs of one pipeline, in ``POST /v1/jobs/batch`` requests.

Each job is prepared as :mod:`steward.client.submission` prepares a single one (a job id of
the client's, the same bytes on every try) and the batch's body is the items' bodies joined,
so the digest the leader keeps for each item is the one a single submission of it would
carry. A batch whose answer was lost is sent again as it was; its items already stored come
back as ``exists`` (this very submission), or as a ``job_exists`` whose digest is the item's,
which counts as success. An item refused with ``missing_contents`` (the cluster's content
collector removed a file since this client uploaded it) makes the client upload the job's
files again and send the refused items once more. An item the leader could not store yet
(503) is sent again with backoff until the client's timeout.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from steward.client import packaging, submission
from steward.client.errors import MissingContentsError
from steward.client.failover import Failover, error_body
from steward.client.job_files import LocalFile
from steward.client.responses import api_error, checked_spec, decode
from steward.client.submission import Submission
from steward.client.uploads import Uploads
from steward.errors import StewardError
from steward.wire.patterns import MAX_BATCH
from steward.wire.rest import ErrorBody, JobView
from steward.wire.submissions import BatchItemResult, BatchSubmitResponse

log = logging.getLogger(__name__)

BATCH_PATH = "/v1/jobs/batch"
RETRIED = frozenset({503, 504})
"""An item answered with one of these was not stored yet, or may have been: sent again."""
RETRY_FIRST, RETRY_MAX = 0.1, 2.0
_sleep, _now = time.sleep, time.monotonic  # replaced by tests: no real waiting
Outcome = JobView | StewardError
"""Per job of a batch: its view, or the error :meth:`Client.submit` would have raised."""


def prepare_many(
    pipeline: Path, jobs: Iterable[Mapping[str, Any]], local: Sequence[LocalFile]
) -> list[Submission]:
    """Each job's submission (JobSpec fields; an id made when it has none), all with the
    pipeline packaged once and naming ``local``; JobRejectedError for a bad spec."""
    artifact = packaging.package(pipeline)
    named = [f.dependency.model_dump(mode="json") for f in local]
    data_b64 = base64.b64encode(artifact.data).decode("ascii")
    items = []
    for fields in jobs:
        spec = {"job_id": packaging.default_job_id(pipeline), **fields}
        if named:
            spec["dependencies"] = named
        items.append(submission.prepare(checked_spec(spec), artifact.filename, data_b64))
    return items


class BatchSender:
    """Sends prepared submissions in batches; see the module docstring."""

    def __init__(self, failover: Failover, uploads: Uploads, job: Callable[[str], JobView]) -> None:
        self._failover = failover
        self._uploads = uploads
        self._job = job

    def send_all(
        self, items: Sequence[Submission], local: Sequence[LocalFile], batch_size: int
    ) -> list[Outcome]:
        """Every item's outcome, in order, ``batch_size`` items a request (at most
        :data:`~steward.wire.submissions.MAX_BATCH`)."""
        size = max(1, min(batch_size, MAX_BATCH))
        outcomes: list[Outcome] = []
        for start in range(0, len(items), size):
            outcomes += self.send(items[start : start + size], local)
        return outcomes

    def send(self, items: Sequence[Submission], local: Sequence[LocalFile]) -> list[Outcome]:
        """The outcome of each item, in order (the files already uploaded)."""
        outcomes = self._until_answered(items)
        missing = [i for i, o in enumerate(outcomes) if isinstance(o, MissingContentsError)]
        if missing and local:
            log.info("files gone from the cluster, uploading again jobs=%d", len(missing))
            self._uploads.forget(local)
            for local_file in local:
                self._uploads.ensure(local_file)
            again = self._until_answered([items[i] for i in missing])
            for index, outcome in zip(missing, again, strict=True):
                outcomes[index] = outcome
        return outcomes

    def _until_answered(self, items: Sequence[Submission]) -> list[Outcome]:
        """Each item's outcome; items the leader could not store yet (503: its ZooKeeper
        connection dropped, a store still under way) are sent again with backoff until the
        client's timeout, as the failover retries a whole request. Such an item may have been
        stored: its retry's ``job_exists`` with its own digest counts as success."""
        outcomes: list[Outcome] = []
        pending = list(range(len(items)))
        deadline = _now() + self._failover.timeout
        delay, retried = RETRY_FIRST, False
        while True:
            answers = self._send_once([items[i] for i in pending], maybe_accepted=retried)
            if not outcomes:
                outcomes = [outcome for outcome, _ in answers]
            again = []
            for index, (outcome, status) in zip(pending, answers, strict=True):
                outcomes[index] = outcome
                if status in RETRIED:
                    again.append(index)
            if not again or _now() + delay > deadline:
                return outcomes
            log.info("batch items not stored yet, sending again jobs=%d", len(again))
            _sleep(delay)
            delay, retried, pending = min(delay * 2, RETRY_MAX), True, again

    def _send_once(
        self, items: Sequence[Submission], *, maybe_accepted: bool
    ) -> list[tuple[Outcome, int]]:
        body = b'{"submissions":[' + b",".join(item.body for item in items) + b"]}"
        response, sent_before = self._failover.send("POST", BATCH_PATH, body)
        if response.status_code != httpx.codes.OK:
            raise api_error(response, error_body(response), None)
        answer = decode(BatchSubmitResponse, response)
        if len(answer.results) != len(items):
            raise StewardError(
                f"the batch answer holds {len(answer.results)} results for {len(items)} jobs"
            )
        maybe = maybe_accepted or sent_before
        return [
            (self._outcome(item, result, response, maybe_accepted=maybe), result.status)
            for item, result in zip(items, answer.results, strict=True)
        ]

    def _outcome(
        self,
        item: Submission,
        result: BatchItemResult,
        response: httpx.Response,
        *,
        maybe_accepted: bool,
    ) -> Outcome:
        if result.job is not None:
            return result.job
        error = result.error or ErrorBody(code="bad_response", message="no job and no error")
        try:
            if submission.is_ours(item, error, maybe_accepted=maybe_accepted):
                return self._job(item.job_id)
        except StewardError as exc:
            return exc
        as_single = httpx.Response(result.status, request=response.request)
        return api_error(as_single, error, item.job_id)

"""``Client.submit_many``: many jobs of one pipeline, in ``POST /v1/jobs/batch`` requests.

Each job is prepared as :mod:`steward.client.submission` prepares a single one (a job id of
the client's, the same bytes on every try) and the batch's body is the items' bodies joined,
so the digest the leader keeps for each item is the one a single submission of it would
carry. A batch whose answer was lost is sent again as it was; its items already stored come
back as ``exists`` (this very submission), or as a ``job_exists`` whose digest is the item's,
which counts as success. An item refused with ``missing_contents`` (the cluster's content
collector removed a file since this client uploaded it) makes the client upload the job's
files again and send the refused items once more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import httpx

from steward.client import submission
from steward.client.errors import MissingContentsError
from steward.client.failover import Failover, error_body
from steward.client.job_files import LocalFile
from steward.client.responses import api_error, decode
from steward.client.submission import Submission
from steward.client.uploads import Uploads
from steward.errors import StewardError
from steward.wire.rest import ErrorBody, JobView
from steward.wire.submissions import BatchItemResult, BatchSubmitResponse

log = logging.getLogger(__name__)

BATCH_PATH = "/v1/jobs/batch"
Outcome = JobView | StewardError
"""Per job of a batch: its view, or the error :meth:`Client.submit` would have raised."""


class BatchSender:
    """Sends prepared submissions in batches; see the module docstring."""

    def __init__(self, failover: Failover, uploads: Uploads, job: Callable[[str], JobView]) -> None:
        self._failover = failover
        self._uploads = uploads
        self._job = job

    def send(self, items: Sequence[Submission], local: Sequence[LocalFile]) -> list[Outcome]:
        """The outcome of each item, in order (the files already uploaded)."""
        outcomes = self._send_once(items)
        missing = [i for i, o in enumerate(outcomes) if isinstance(o, MissingContentsError)]
        if missing and local:
            log.info("files gone from the cluster, uploading again jobs=%d", len(missing))
            self._uploads.forget(local)
            for local_file in local:
                self._uploads.ensure(local_file)
            again = self._send_once([items[i] for i in missing])
            for index, outcome in zip(missing, again, strict=True):
                outcomes[index] = outcome
        return outcomes

    def _send_once(self, items: Sequence[Submission]) -> list[Outcome]:
        body = b'{"submissions":[' + b",".join(item.body for item in items) + b"]}"
        response, maybe_accepted = self._failover.send("POST", BATCH_PATH, body)
        if response.status_code != httpx.codes.OK:
            raise api_error(response, error_body(response), None)
        answer = decode(BatchSubmitResponse, response)
        if len(answer.results) != len(items):
            raise StewardError(
                f"the batch answer holds {len(answer.results)} results for {len(items)} jobs"
            )
        return [
            self._outcome(item, result, response, maybe_accepted=maybe_accepted)
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

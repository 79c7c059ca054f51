"""The one exception tree of Steward.

Every error Steward raises on purpose is a ``StewardError``. Raw kazoo, fsspec or OS
exceptions never escape the layer that called them: that layer translates them into one of
these, keeping the original as ``__cause__``::

    StewardError
    ├── ConfigurationError            a bad key or value in steward.toml, the env or -D
    ├── EnvironmentMissingError       Java or ZooKeeper not installed (names the fix)
    ├── ManagedZooKeeperError         the managed ZooKeeper could not start, stop or answer
    │   └── PortInUseError            a port it needs is taken; nothing was started
    ├── CoordinationError             ZooKeeper could not be reached or answered oddly
    │   ├── ZooKeeperUnavailableError no connection within the deadline (retryable)
    │   ├── ConcurrentModificationError  a compare-and-set lost a race (retryable)
    │   ├── NodeExistsError           a znode to create is already there
    │   └── NoNodeError               a znode to change or delete is not there
    ├── LeadershipLostError           this process is not (or no longer) the leader
    │   └── FencedError               a fenced write was rejected: the epoch is stale
    ├── StoreError                    an HA store could not do what was asked
    │   ├── BlobStoreError            the blob storage failed (unreachable, full, read-only)
    │   │   └── BlobMissingError      the storage answered: the blob is not there
    │   ├── JobNotFoundError          no such job in the store
    │   ├── JobExistsError            the job id is already taken
    │   └── CorruptStateError         a payload is malformed, truncated or fails its checksum
    │       ├── UnsupportedSchemaError  written by a newer Steward (schema too high)
    │       └── ResultBodyError       a result's index names a body missing or damaged in storage
    ├── JobRejectedError              a submission is invalid; nothing was stored
    ├── NotReadyError                 the leader is still recovering, or no longer leads (retry)
    ├── JobResultExistsError *        the leader refuses a submit or cancel: the job already has
    │                                 a result (carried as .result; answered 409 job_terminated)
    ├── ApiError                      a JobManager answered with an error (status, code)
    │   ├── JobTerminatedError **     the job already has a result (carried as .result)
    │   └── NoLeaderError             no leader was elected (503 no_leader) until the deadline
    ├── ClusterUnreachableError       no JobManager answered within the client's deadline
    ├── IdentityProviderError         the sign-on provider could not be reached or answered oddly
    ├── UnmappedIdentityError         a verified sign-on token whose groups map to no role (403)
    ├── WaitTimeoutError              a job did not terminate within the time waited for it
    └── LocalClusterError             the local cluster (steward cluster) cannot start or stop
        └── LocalClusterStartError    a process failed to come up; what was started is stopped

This module imports nothing from Steward. The two errors that carry a record live beside
it: (*) in :mod:`steward.jobmanager.errors` (a :class:`JobResultEntry`), (**) in
:mod:`steward.client.errors` (a :class:`ResultView`; also exported by :mod:`steward.client`).

A failure is *unavailability* (:func:`is_unavailable`: a store did not answer; retry, conclude
nothing) or a *verdict* (the thing is missing or corrupt). Recovery and the loss of an attempt
act only on verdicts (docs/architecture.md, "Blips are not verdicts").

The client raises ``JobNotFoundError`` and ``JobExistsError`` for the API's ``job_not_found``
and ``job_exists`` answers too, so a caller catches one class whatever layer noticed.
"""

from __future__ import annotations


class StewardError(Exception):
    """Base of every error Steward raises on purpose."""


class ConfigurationError(StewardError):
    """A configuration key is unknown or its value is invalid."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class EnvironmentMissingError(StewardError):
    """Something Steward needs from the machine (Java, ZooKeeper) is not installed."""


class ManagedZooKeeperError(StewardError):
    """The managed ZooKeeper could not be started, stopped or queried."""


class PortInUseError(ManagedZooKeeperError):
    """A port the managed ZooKeeper needs is already in use."""


class CoordinationError(StewardError):
    """ZooKeeper could not be reached or returned an unexpected error."""


class ZooKeeperUnavailableError(CoordinationError):
    """No usable ZooKeeper connection within the deadline; the operation may be retried."""


class ConcurrentModificationError(CoordinationError):
    """A compare-and-set lost a race against another writer; re-read and retry."""


class NodeExistsError(CoordinationError):
    """A znode to be created already exists."""

    def __init__(self, path: str) -> None:
        super().__init__(f"znode {path} already exists")
        self.path = path


class NoNodeError(CoordinationError):
    """A znode to be changed or deleted does not exist."""

    def __init__(self, path: str) -> None:
        super().__init__(f"znode {path} does not exist")
        self.path = path


class LeadershipLostError(StewardError):
    """The caller is not, or is no longer, the leader."""


class FencedError(LeadershipLostError):
    """A fenced write was rejected because the writer's epoch is no longer current.

    Nothing of the rejected transaction was applied.
    """

    def __init__(self, message: str, *, epoch: int | None = None) -> None:
        super().__init__(message)
        self.epoch = epoch


class StoreError(StewardError):
    """An HA store could not do what was asked."""


class BlobStoreError(StoreError):
    """The blob storage failed: unreachable, full, read-only, or the blob is missing."""


class BlobMissingError(BlobStoreError):
    """The blob storage answered, and the blob is not in it (deleted, never written)."""


class JobNotFoundError(StoreError):
    """No job with this id in the store."""

    def __init__(self, job_id: str, what: str = "job") -> None:
        super().__init__(f"no {what} for job {job_id!r}")
        self.job_id = job_id


class JobExistsError(StoreError):
    """The job id is already taken in the store.

    ``submission_sha256``: the sha256 of the request body that created the existing job, when
    known, so that a client can tell its own retried submission from another job."""

    def __init__(
        self, job_id: str, what: str = "job", *, submission_sha256: str | None = None
    ) -> None:
        super().__init__(f"a {what} for job {job_id!r} already exists")
        self.job_id = job_id
        self.submission_sha256 = submission_sha256


class CorruptStateError(StoreError):
    """A stored payload is malformed, truncated, or does not match its checksum."""


class ResultBodyError(CorruptStateError):
    """A job result's index names a body that is missing or damaged in blob storage."""


class UnsupportedSchemaError(CorruptStateError):
    """A payload was written by a newer Steward with a schema this version cannot read."""


class JobRejectedError(StewardError):
    """A job submission is invalid (bad spec or artifact); nothing was stored."""


class NotReadyError(StewardError):
    """The new leader is still recovering (or no longer leads); try again shortly."""


class ApiError(StewardError):
    """A JobManager answered a request with an error: its HTTP status, code and message."""

    def __init__(self, message: str, *, status: int, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class NoLeaderError(ApiError):
    """The JobManagers answered, but none leads (503 ``no_leader``) until the deadline."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message, status=503, code="no_leader")
        self.retry_after = retry_after


class ClusterUnreachableError(StewardError):
    """No JobManager could be found or answered within the client's deadline."""


class IdentityProviderError(StewardError):
    """The OpenID Connect provider (discovery document, keys, token endpoint) could not be
    reached or answered something unusable: nothing about the caller is concluded (retry)."""


class UnmappedIdentityError(StewardError):
    """A sign-on token verified, but none of its groups maps to a role: refused (403)."""


class WaitTimeoutError(StewardError):
    """A job did not reach a terminal state within the time a caller waited for it."""


class LocalClusterError(StewardError):
    """The local cluster of ``steward cluster`` could not be started, stopped or read."""


class LocalClusterStartError(LocalClusterError):
    """A process of the local cluster failed, or the cluster was not ready in time; everything
    the start started has been stopped again. The message names the process and its log."""


def is_unavailable(exc: BaseException) -> bool:
    """True if ``exc`` says a store could not be reached or did not answer in time (a blip:
    retry), False if it is a verdict about the thing asked for (missing, corrupt) or not a
    store's error at all."""
    if isinstance(exc, BlobMissingError | CorruptStateError | NoNodeError | NodeExistsError):
        return False
    return isinstance(exc, BlobStoreError | CoordinationError)

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
    │   ├── BlobStoreError            the blob storage failed (full, read-only, missing)
    │   ├── JobNotFoundError          no such job in the store
    │   ├── JobExistsError            the job id is already taken
    │   └── CorruptStateError         a payload is malformed, truncated or fails its checksum
    │       └── UnsupportedSchemaError  written by a newer Steward (schema too high)
    └── JobRejectedError              a submission is invalid; nothing was stored
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


class JobNotFoundError(StoreError):
    """No job with this id in the store."""

    def __init__(self, job_id: str, what: str = "job") -> None:
        super().__init__(f"no {what} for job {job_id!r}")
        self.job_id = job_id


class JobExistsError(StoreError):
    """The job id is already taken in the store."""

    def __init__(self, job_id: str, what: str = "job") -> None:
        super().__init__(f"a {what} for job {job_id!r} already exists")
        self.job_id = job_id


class CorruptStateError(StoreError):
    """A stored payload is malformed, truncated, or does not match its checksum."""


class UnsupportedSchemaError(CorruptStateError):
    """A payload was written by a newer Steward with a schema this version cannot read."""


class JobRejectedError(StewardError):
    """A job submission is invalid (bad spec or artifact); nothing was stored."""

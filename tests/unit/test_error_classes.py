"""Unavailability or verdict (steward.errors.is_unavailable): what recovery, the loss of an
attempt and a TaskManager's start may retry, and what they must act on (issue 23)."""

from __future__ import annotations

import pytest

from steward.errors import (
    BlobMissingError,
    BlobStoreError,
    ConcurrentModificationError,
    CoordinationError,
    CorruptStateError,
    JobNotFoundError,
    NodeExistsError,
    NoNodeError,
    UnsupportedSchemaError,
    ZooKeeperUnavailableError,
    is_unavailable,
)


@pytest.mark.parametrize(
    "error",
    [
        BlobStoreError("cannot read blob k from s3://b: no answer within 20 s"),
        ZooKeeperUnavailableError("lost the ZooKeeper connection (at /x)"),
        CoordinationError("ZooKeeper failed on /x: OperationTimeoutError()"),
        ConcurrentModificationError("znode /x changed concurrently"),
    ],
)
def test_a_store_that_did_not_answer_is_unavailable(error: Exception) -> None:
    assert is_unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        BlobMissingError("blob k is missing from file:///s"),
        CorruptStateError("blob k: not the blob its pointer names"),
        UnsupportedSchemaError("schema 2 was written by a newer Steward"),
        NoNodeError("/x"),
        NodeExistsError("/x"),
        JobNotFoundError("job-a"),
        ValueError("not a store's error"),
    ],
)
def test_a_missing_or_corrupt_thing_is_a_verdict(error: Exception) -> None:
    assert not is_unavailable(error)

"""The multiRead request's wire format (jute, big-endian), built here by hand from ZooKeeper's
``MultiOperationRecord`` / ``MultiResponse`` layout, and its batching by count and bytes."""

from __future__ import annotations

import struct

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoAuthError, NoNodeError

from steward.errors import CoordinationError
from steward.ha.kazoo_handler import PollHandler
from steward.store import multiread, zk

_STAT = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
"""czxid, mzxid, ctime, mtime, version, cversion, aversion, ephemeralOwner, dataLength,
numChildren, pzxid."""


def _header(kind: int, done: bool, err: int) -> bytes:
    return struct.pack("!iBi", kind, done, err)


def _string(text: bytes) -> bytes:
    return struct.pack("!i", len(text)) + text


def _get_data_answer(data: bytes | None) -> bytes:
    buffer = struct.pack("!i", -1) if data is None else _string(data)
    return _header(4, False, 0) + buffer + struct.pack("!qqqqiiiqiiq", *_STAT)


def _error_answer(code: int) -> bytes:
    return _header(-1, False, code) + struct.pack("!i", code)


END = _header(-1, True, -1)


def test_a_request_is_a_getdata_per_path_without_watch_then_the_end_header() -> None:
    request = multiread.MultiRead(["/a", "/jobs/é"])

    assert request.type == 22
    assert bytes(request.serialize()) == (
        _header(4, False, -1)
        + _string(b"/a")
        + b"\x00"
        + _header(4, False, -1)
        + _string("/jobs/é".encode())
        + b"\x00"
        + END
    )


def test_request_size_is_the_bytes_on_the_wire() -> None:
    paths = ["/a", "/jobs/é", "/x" * 40]

    on_the_wire = 4 + 4 + 4 + len(multiread.MultiRead(paths).serialize())  # length, xid, type
    assert multiread.request_size(paths) == on_the_wire


def test_an_answer_holds_data_and_stat_or_each_reads_own_error() -> None:
    request = multiread.MultiRead(["/a", "/gone", "/empty", "/secret"])
    prefix = b"\xff" * 16  # the reply header kazoo has read already
    response = (
        prefix
        + _get_data_answer(b"A")
        + _error_answer(-101)
        + _get_data_answer(None)
        + _error_answer(-102)
        + END
    )

    answers = request.deserialize(response, len(prefix))

    assert answers[0] == (b"A", _STAT)
    assert answers[0][1].version == 5  # type: ignore[union-attr]
    assert isinstance(answers[1], NoNodeError)
    assert answers[2] == (b"", _STAT)
    assert isinstance(answers[3], NoAuthError)


@pytest.mark.parametrize(
    ("response", "message"),
    [
        (_get_data_answer(b"A") + END, "answered 1 of 2"),
        (_header(8, False, 0) + END, "type 8"),
    ],
)
def test_an_answer_that_does_not_match_the_request_is_refused(
    response: bytes, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        multiread.MultiRead(["/a", "/b"]).deserialize(response, 0)


def test_an_unknown_error_code_is_a_plain_kazoo_error() -> None:
    unknown = multiread.error(-12345)

    assert type(unknown) is KazooException
    assert "-12345" in str(unknown)
    assert isinstance(multiread.error(-101), NoNodeError)


def test_batches_are_bounded_by_count_and_by_bytes_in_order() -> None:
    paths = [f"/p{index}" for index in range(7)]
    two = multiread.request_size(paths[:2])

    by_count = list(multiread.batches(paths, 3, 1 << 20))
    by_bytes = list(multiread.batches(paths, 100, two))
    huge = list(multiread.batches(["/a", "/" + "x" * 500, "/b"], 100, 100))

    assert by_count == [paths[0:3], paths[3:6], paths[6:7]]
    assert [len(group) for group in by_bytes] == [2, 2, 2, 1]
    assert [path for group in by_bytes for path in group] == paths
    assert all(multiread.request_size(group) <= two for group in by_bytes)
    assert huge == [["/a"], ["/" + "x" * 500], ["/b"]]  # too long alone: sent alone


def test_a_children_request_and_answer_list_each_paths_children_or_its_error() -> None:
    request = multiread.MultiRead(["/jobs", "/gone", "/leaf"], multiread.GET_CHILDREN)
    names = struct.pack("!i", 2) + _string(b"job-b") + _string("job-é".encode())
    response = (
        _header(8, False, 0)
        + names
        + _error_answer(-101)
        + _header(8, False, 0)
        + struct.pack("!i", 0)
        + END
    )

    assert bytes(request.serialize()).startswith(_header(8, False, -1) + _string(b"/jobs") + b"\0")
    answers = request.deserialize(response, 0)

    assert answers[0] == ["job-b", "job-é"]
    assert isinstance(answers[1], NoNodeError)
    assert answers[2] == []


def test_an_answer_of_the_other_read_kind_is_refused() -> None:
    children = multiread.MultiRead(["/a"], multiread.GET_CHILDREN)

    with pytest.raises(ValueError, match="type 4"):
        children.deserialize(_get_data_answer(b"A") + END, 0)
    with pytest.raises(ValueError, match="GetData or GetChildren"):
        multiread.MultiRead(["/a"], 1)


def test_a_malformed_answer_reaches_the_caller_as_a_coordination_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """kazoo hands a deserialize error to the async result: it must not escape the store layer
    raw (rule: callers catch CoordinationError)."""
    handler = PollHandler()
    failed = handler.async_result()
    failed.set_exception(ValueError("multiRead answered 1 of 2 reads"))
    monkeypatch.setattr(multiread, "send", lambda _client, _paths, _op: failed)

    with pytest.raises(CoordinationError, match="malformed: multiRead answered 1 of 2"):
        zk.read_many(KazooClient(handler=handler), ["/a", "/b"])

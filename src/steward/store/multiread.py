"""ZooKeeper's multiRead (opcode 22, servers 3.6 and newer) as a kazoo request.

One request carries N GetData (or N GetChildren) sub-operations and one response carries each
answer: the data and stat of a znode (or its children), or that sub-operation's own error (a
missing znode does not abort the others, unlike a write multi). kazoo 2.x has no multiRead;
its protocol layer takes any object with a ``type``, ``serialize()`` and
``deserialize(buffer, offset)`` through ``KazooClient._call``, the way its transaction commit
sends a write multi.

Wire format (jute, big-endian), the same as a write multi's with other sub-operations:

- request: for each path a ``MultiHeader`` (int type = 4 GetData or 8 GetChildren, bool done =
  false, int err = -1) then a ``GetDataRequest`` or ``GetChildrenRequest`` (both: string path,
  bool watch = false); then the end header (-1, true, -1);
- response: for each path a ``MultiHeader``; type 4 is followed by a ``GetDataResponse``
  (buffer data, Stat), type 8 by a ``GetChildrenResponse`` (vector of strings), type -1 by an
  ``ErrorResponse`` (int err); then the end header.

A server older than 3.6 does not know opcode 22: it answers UNIMPLEMENTED (-6) and then closes
the connection (the session survives). :func:`steward.store.zk.read_many` takes that answer as
"not supported" for the rest of its client's life and reads that server one znode at a time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any, TypeAlias

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, KazooException
from kazoo.interfaces import IAsyncResult
from kazoo.protocol.states import ZnodeStat

OPCODE = 22
GET_DATA = 4
GET_CHILDREN = 8
ERROR = -1

_HEADER = struct.Struct("!iBi")
_INT = struct.Struct("!i")
_STAT = struct.Struct("!qqqqiiiqiiq")
_END = _HEADER.pack(ERROR, True, ERROR)

Answer: TypeAlias = tuple[bytes, Any] | list[str] | Exception
"""One sub-operation's answer: ``(data, ZnodeStat)`` (GetData), the child names (GetChildren),
or the kazoo exception of its error code (kazoo is untyped: ``Any`` is its ``ZnodeStat``)."""


class MultiRead:
    """A kazoo request reading the data (or the children) of every path in one round trip.

    >>> async_result = client.handler.async_result()
    >>> client._call(MultiRead(["/a", "/b"]), async_result)
    >>> async_result.get()  # [(b"A", ZnodeStat(...)), NoNodeError()]
    """

    type = OPCODE

    def __init__(self, paths: Sequence[str], op: int = GET_DATA) -> None:
        if op not in (GET_DATA, GET_CHILDREN):
            raise ValueError(f"multiRead reads with GetData or GetChildren, not type {op}")
        self.paths = tuple(paths)
        self.op = op

    def __repr__(self) -> str:  # kazoo logs requests at debug level: not 100 paths
        return f"MultiRead({len(self.paths)} paths, op {self.op})"

    def serialize(self) -> bytearray:
        out = bytearray()
        head = _HEADER.pack(self.op, False, ERROR)
        for path in self.paths:
            encoded = path.encode("utf-8")
            out += head
            out += _INT.pack(len(encoded))
            out += encoded
            out.append(0)  # no watch
        out += _END
        return out

    def deserialize(self, buffer: bytes, offset: int) -> list[Answer]:
        """Every answer in path order; ValueError if the response does not match the request."""
        answers: list[Answer] = []
        while True:
            kind, done, _err = _HEADER.unpack_from(buffer, offset)
            offset += _HEADER.size
            if done:
                break
            if kind == self.op == GET_DATA:
                answer, offset = _data(buffer, offset)
                answers.append(answer)
            elif kind == self.op == GET_CHILDREN:
                names, offset = _children(buffer, offset)
                answers.append(names)
            elif kind == ERROR:
                (code,) = _INT.unpack_from(buffer, offset)
                offset += _INT.size
                answers.append(error(code))
            else:
                raise ValueError(f"multiRead answered an operation of type {kind}")
        if len(answers) != len(self.paths):
            raise ValueError(f"multiRead answered {len(answers)} of {len(self.paths)} reads")
        return answers


def _data(buffer: bytes, offset: int) -> tuple[tuple[bytes, Any], int]:
    (length,) = _INT.unpack_from(buffer, offset)
    offset += _INT.size
    data = b""
    if length > 0:
        data = bytes(buffer[offset : offset + length])
        offset += length
    stat = ZnodeStat._make(_STAT.unpack_from(buffer, offset))
    return (data, stat), offset + _STAT.size


def _children(buffer: bytes, offset: int) -> tuple[list[str], int]:
    (count,) = _INT.unpack_from(buffer, offset)
    offset += _INT.size
    names = []
    for _ in range(max(count, 0)):
        (length,) = _INT.unpack_from(buffer, offset)
        offset += _INT.size
        names.append(bytes(buffer[offset : offset + length]).decode("utf-8"))
        offset += length
    return names, offset


def error(code: int) -> Exception:
    """The kazoo exception of a ZooKeeper error code (an unknown code: a plain one)."""
    kind = EXCEPTIONS.get(code)  # get: kazoo's table raises RuntimeError for an unknown code
    exception: Exception = (
        KazooException(f"ZooKeeper error code {code}") if kind is None else kind()
    )
    return exception


def send(client: KazooClient, paths: Sequence[str], op: int = GET_DATA) -> IAsyncResult:
    """Send one multiRead of ``paths`` (absolute, under the client's chroot if it has one);
    the async result answers the list of :data:`Answer`, or raises the request's own error
    (``UnimplementedError`` from a server older than 3.6)."""
    chroot = client.chroot or ""
    async_result = client.handler.async_result()
    client._call(MultiRead([chroot + path for path in paths], op), async_result)
    return async_result


_PER_PATH = _HEADER.size + _INT.size + 1
"""A path's bytes in a request beside its own: its header, its length, its watch flag."""
_EMPTY = 12 + _HEADER.size
"""A request's bytes without a path: the length prefix, the request header, the end header."""


def request_size(paths: Sequence[str]) -> int:
    """Bytes of a multiRead of ``paths`` on the wire, its length prefix and header included."""
    return _EMPTY + sum(_PER_PATH + len(p.encode("utf-8")) for p in paths)


def batches(paths: Sequence[str], count: int, size: int) -> Iterator[list[str]]:
    """``paths`` in order, in groups of at most ``count`` paths and :func:`request_size`
    ``size`` bytes (a path longer than that alone is a group of its own)."""
    group: list[str] = []
    used = _EMPTY
    for path in paths:  # a takeover batches 20,000 paths: a path's size is summed here
        cost = _PER_PATH + len(path.encode("utf-8"))
        if group and (len(group) == count or used + cost > size):
            yield group
            group, used = [], _EMPTY
        group.append(path)
        used += cost
    if group:
        yield group

"""uvicorn's httptools protocol with a bound on a request's head (its request line and headers).

llhttp, the C parser under httptools, takes a head of any size, and httptools keeps a header
it has not finished in memory: a client could send megabytes of header and never end it. h11,
the parser Steward served with before, refused a head over 16 KiB; this protocol keeps that
bound. The parts finished so far are counted as the parser hands them over, and the bytes a
connection sends while its head is still unfinished are counted chunk by chunk, so neither a
single huge header nor thousands of small ones get past :data:`MAX_HEAD_BYTES` by much more
than one read. An oversized head is answered as h11 answered it: 400, and the connection
closed.
"""

from __future__ import annotations

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEAD_BYTES = 16 * 1024
"""h11's default (``h11.DEFAULT_MAX_INCOMPLETE_EVENT_SIZE``), which Steward served with."""


class HeadTooLarge(httptools.HttpParserError):
    """A request's line and headers exceed :data:`MAX_HEAD_BYTES`."""


class BoundedHeadProtocol(HttpToolsProtocol):
    """httptools' protocol, refusing (400) a request whose head exceeds :data:`MAX_HEAD_BYTES`."""

    _head_bytes = 0
    """The finished parts of the current head: its URL, its headers' names and values."""
    _unfinished_bytes = 0
    """Bytes received while the current head was still unfinished after them."""
    _in_head = False

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if not self._in_head:
            self._unfinished_bytes = 0
            return
        self._unfinished_bytes += len(data)
        if self._unfinished_bytes > MAX_HEAD_BYTES and not self.transport.is_closing():
            self.logger.warning("Request head over %d bytes.", MAX_HEAD_BYTES)
            self.send_400_response("Invalid HTTP request received.")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)  # ": " and CRLF
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            raise HeadTooLarge(f"request head over {MAX_HEAD_BYTES} bytes")

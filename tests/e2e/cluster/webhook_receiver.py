"""A webhook receiver run by a test: a stdlib HTTP server in a thread that records every call.

It answers as the test sets it (:attr:`WebhookReceiver.answer`: 200, 503 to refuse, or 500 on
the first call of each event id then 200), and keeps each call's path, headers and body, so
a test counts what was accepted per event id and checks the signature.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from steward.wire.notifications import EVENT_ID_HEADER, SIGNATURE_HEADER, verify

FAIL_FIRST = -1
"""An :attr:`WebhookReceiver.answer`: 500 to the first call of each event id, then 200."""


@dataclass(frozen=True)
class Call:
    path: str
    event_id: str
    signature: str
    body: bytes
    status: int

    @property
    def event(self) -> dict[str, Any]:
        return json.loads(self.body)  # type: ignore[no-any-return]

    @property
    def accepted(self) -> bool:
        return 200 <= self.status < 300


class WebhookReceiver:
    def __init__(self, answer: int = 200) -> None:
        self.answer = answer
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def take(self, path: str, event_id: str, signature: str, body: bytes) -> int:
        with self._lock:
            seen = any(c.event_id == event_id and c.path == path for c in self.calls)
            status = (500 if not seen else 200) if self.answer == FAIL_FIRST else self.answer
            self.calls.append(Call(path, event_id, signature, body, status))
            return status

    def accepted(self, path: str | None = None) -> Counter[str]:
        """Accepted calls per event id (of ``path`` only, if given)."""
        with self._lock:
            return Counter(c.event_id for c in self.calls if c.accepted and path in (None, c.path))

    def tried(self, path: str | None = None) -> Counter[str]:
        """Every call per event id, accepted or not."""
        with self._lock:
            return Counter(c.event_id for c in self.calls if path in (None, c.path))

    def calls_of(self, event_id: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.event_id == event_id]

    def all_signed_with(self, secret: bytes) -> bool:
        with self._lock:
            return all(verify(secret, c.body, c.signature) for c in self.calls)


def _handler(receiver: WebhookReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = receiver.take(
                self.path,
                self.headers.get(EVENT_ID_HEADER, ""),
                self.headers.get(SIGNATURE_HEADER, ""),
                body,
            )
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    return Handler

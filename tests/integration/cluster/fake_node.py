"""A stand-in for ``steward jobmanager`` / ``steward taskmanager`` with the same command line,
for tests of the local cluster's process management (start, readiness, status, stop).

- taskmanager: "registers" by creating ``<taskmanager.workdir>/registered/<id>``, removes it on
  SIGTERM; with ``FAKE_NODE_FAIL=<id>`` it writes an error to its log and exits 3 instead;
- jobmanager: serves ``GET /v1/cluster`` on ``jobmanager.port``: jm-1 leads, the TaskManagers
  are the registered ones; ``GET /readyz`` answers ready.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import tomllib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("-D", dest="defines", action="append", default=[])
    parser.add_argument("role", choices=["jobmanager", "taskmanager"])
    parser.add_argument("--id", required=True)
    options = parser.parse_args()
    settings = tomllib.loads(options.config.read_text())
    settings.update(dict(d.split("=", 1) for d in options.defines))
    registry = Path(settings["taskmanager.workdir"]) / "registered"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if options.role == "taskmanager":
        return taskmanager(options.id, registry)
    return jobmanager(options.id, int(settings["jobmanager.port"]), registry, settings)


def taskmanager(tm_id: str, registry: Path) -> int:
    if os.environ.get("FAKE_NODE_FAIL") == tm_id:
        print(f"boom: {tm_id} cannot start", file=sys.stderr, flush=True)
        return 3
    registry.mkdir(parents=True, exist_ok=True)
    (registry / tm_id).touch()
    try:
        while True:
            time.sleep(1)
    finally:
        (registry / tm_id).unlink(missing_ok=True)


def jobmanager(jm_id: str, port: int, registry: Path, settings: dict[str, object]) -> int:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/readyz":
                self._json({"ready": True, "id": jm_id})
                return
            if self.path != "/v1/cluster":
                self.send_error(404)
                return
            taskmanagers = sorted(p.name for p in registry.glob("*")) if registry.is_dir() else []
            self._json(
                {
                    "cluster_id": settings["high-availability.cluster-id"],
                    "leader": {"id": "jm-1", "address": "http://127.0.0.1", "epoch": 1},
                    "jobmanagers": [],
                    "taskmanagers": [{"id": t, "address": "", "slots": 2} for t in taskmanagers],
                    "served_by": jm_id,
                }
            )

        def _json(self, value: dict[str, object]) -> None:
            body = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

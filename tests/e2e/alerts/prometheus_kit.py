"""A real Prometheus and a real Alertmanager (Debian's ``prometheus`` and
``prometheus-alertmanager`` binaries) around a Steward cluster, and the webhook receiver
Alertmanager delivers to.

Each server runs in a process group of its own with its storage and log in the test's folder,
on a free loopback port (Alertmanager's gossip port off: one instance needs no peers), and is
killed when the test ends. Prometheus' configuration is the shipped example
(deploy/prometheus/prometheus.yml) with the test's targets, token file and one-second
intervals; its rules are deploy/prometheus/steward-alerts.yml as shipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml

from steward.testing.spawning import spawn_logged
from support import ROOT, free_port, wait_until

DEPLOY = ROOT / "deploy" / "prometheus"
PROMETHEUS = "/usr/bin/prometheus"
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
START_TIMEOUT = 30.0


@dataclass
class Server:
    """One started Prometheus or Alertmanager."""

    name: str
    url: str
    popen: subprocess.Popen[bytes]
    log: Path

    def ready(self) -> bool:
        with contextlib.suppress(httpx.HTTPError):
            return httpx.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        assert self.popen.poll() is None, f"{self.name} exited:\n{self.log.read_text()[-3000:]}"
        return False

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGTERM)
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)


def _start(name: str, argv: list[str], folder: Path, port: int) -> Server:
    binary = shutil.which(argv[0]) or argv[0]
    assert Path(binary).exists(), f"{argv[0]} missing: scripts/setup.sh installs it"
    log = folder / f"{name}.log"
    server = Server(name, f"http://127.0.0.1:{port}", spawn_logged(argv, log, cwd=folder), log)
    try:
        wait_until(server.ready, START_TIMEOUT, f"{name} ready")
    except BaseException:
        server.stop()
        raise
    return server


def start_alertmanager(folder: Path, webhook_url: str) -> Server:
    """Alertmanager routing every alert to ``webhook_url`` at once (no grouping wait)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "route": {
            "receiver": "test",
            "group_by": ["alertname"],
            "group_wait": "0s",
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [{"name": "test", "webhook_configs": [{"url": webhook_url}]}],
    }
    (folder / "alertmanager.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    argv = [
        ALERTMANAGER,
        f"--config.file={folder / 'alertmanager.yml'}",
        f"--storage.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    return _start("alertmanager", argv, folder, port)


def prometheus_config(
    jobmanagers: list[str], taskmanagers: list[str], token_file: Path, alertmanager: str
) -> dict[str, Any]:
    """The shipped example, pointed at this cluster (http or https as its addresses say)."""
    config: dict[str, Any] = yaml.safe_load((DEPLOY / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(DEPLOY / "steward-alerts.yml")]
    config["alerting"]["alertmanagers"][0]["static_configs"] = [
        {"targets": [urlsplit(alertmanager).netloc]}
    ]
    targets = {"steward-jobmanager": jobmanagers, "steward-taskmanager": taskmanagers}
    for job in config["scrape_configs"]:
        addresses = [urlsplit(url) for url in targets[job["job_name"]]]
        job["scheme"] = addresses[0].scheme
        if job["scheme"] == "http":
            del job["tls_config"]
        job["authorization"]["credentials_file"] = str(token_file)
        job["static_configs"] = [{"targets": [a.netloc for a in addresses]}]
    return config


def start_prometheus(folder: Path, config: dict[str, Any]) -> Server:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    argv = [
        PROMETHEUS,
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    return _start("prometheus", argv, folder, port)


def query(prometheus: Server, expr: str) -> list[dict[str, Any]]:
    """The instant vector ``expr`` evaluates to now."""
    answer = httpx.get(f"{prometheus.url}/api/v1/query", params={"query": expr}, timeout=5)
    answer.raise_for_status()
    result: list[dict[str, Any]] = answer.json()["data"]["result"]
    return result


def active_alerts(prometheus: Server) -> list[dict[str, Any]]:
    """Prometheus' pending and firing alerts."""
    answer = httpx.get(f"{prometheus.url}/api/v1/alerts", timeout=5)
    answer.raise_for_status()
    alerts: list[dict[str, Any]] = answer.json()["data"]["alerts"]
    return alerts


@dataclass
class Delivery:
    at: float
    """time.monotonic() when it arrived."""
    body: dict[str, Any]


@dataclass
class WebhookReceiver:
    """An HTTP server recording every JSON body POSTed to it (Alertmanager's webhook)."""

    url: str = ""
    deliveries: list[Delivery] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.deliveries.append(Delivery(time.monotonic(), body))

    def alerts(self, name: str, status: str = "firing") -> list[tuple[float, dict[str, Any]]]:
        """Every alert ``name`` delivered with ``status``, with its arrival time."""
        with self._lock:
            return [
                (d.at, alert)
                for d in self.deliveries
                for alert in d.body.get("alerts", [])
                if alert["labels"].get("alertname") == name and alert["status"] == status
            ]


@contextlib.contextmanager
def webhook_receiver() -> Iterator[WebhookReceiver]:
    receiver = WebhookReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            receiver.record(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *_args: Any) -> None:
            pass  # keep the test's output to the assertions

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/alerts"
    thread = threading.Thread(target=server.serve_forever, name="webhook", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)

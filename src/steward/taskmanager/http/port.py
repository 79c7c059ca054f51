"""The TaskManager's HTTP port as one part of the TaskManager: built from its settings, started
after its ZooKeeper session (token records are read through it), stopped last.

It also learns which attempts' folders the retention removed: :meth:`HttpPort.noting_removals`
wraps the guard :class:`~steward.taskmanager.workdir_cleaner.WorkdirCleaner` removes folders
under, so the log routes answer 410 (removed, and when) rather than 404 for them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from steward.config import Settings
from steward.ha.session import Session
from steward.metrics import TaskManagerMetrics
from steward.taskmanager.reporting import Attempts
from steward.taskmanager.workdir_cleaner import Guard

from .app import create_app
from .files import AttemptLogs, Phase, RemovedLogs
from .security import authenticator, takes_certificates
from .server import HttpServer
from .state import Node


class HttpPort:
    """The HTTP port of TaskManager ``tm_id``, whose attempts' folders are under ``workdir``."""

    def __init__(
        self,
        tm_id: str,
        settings: Settings,
        *,
        session: Session,
        attempts: Attempts,
        workdir: Path,
        ready: Callable[[], str | None],
        metrics: TaskManagerMetrics | None = None,
    ) -> None:
        self._settings = settings
        self._session = session
        self._attempts = attempts
        self._ready = ready
        self._metrics = metrics or TaskManagerMetrics()
        self.id = tm_id
        self.removed = RemovedLogs()
        self.logs = AttemptLogs(workdir, self._phase, self.removed)
        config = settings.taskmanager
        self.server = HttpServer(
            tm_id, config.bind_host, config.port, config.advertised_address, settings.tls
        )
        self.address = self.server.address

    def start(self) -> HttpPort:
        security = self._settings.security
        app = create_app(
            Node(self.id, self.logs, self._ready),
            authenticator(security, self._session),
            certificates=takes_certificates(security, self._settings.tls),
        )
        app.state.metrics = self._metrics  # what /metrics serves (.metrics)
        self.server.start(app)
        return self

    def stop(self) -> None:
        self.logs.close()
        self.server.stop()

    def noting_removals(self, guard: Guard) -> Guard:
        """``guard``, which also notes each attempt folder it let the cleaner remove."""

        def noting(job_id: str, attempt: int | None, action: Callable[[], object]) -> bool:
            ran = guard(job_id, attempt, action)
            if ran and attempt is not None:
                self.removed.note(job_id, attempt)
            return ran

        return noting

    def _phase(self, job_id: str, attempt: int) -> Phase:
        found = self._attempts.get(job_id, attempt)
        return Phase.RUNNING if found is not None and found.active else Phase.ENDED

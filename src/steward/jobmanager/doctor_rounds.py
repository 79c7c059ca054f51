"""The leader's own ``steward doctor`` examinations, every ``jobmanager.doctor.interval``.

An examination a JobManager makes sets its ``steward_doctor_findings`` gauges (the alerts of
deploy/prometheus/ read them); without rounds they would say only what the last person who
asked learnt. One round reads every record of the cluster once, so only a leader that has
recovered runs them (a standby, or a leader still recovering, skips its turn), the first one
interval after the JobManager started. A failed round is logged and the next one tries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from steward.errors import StewardError

log = logging.getLogger(__name__)


class DoctorRounds:
    """Calls ``examine`` every ``interval`` seconds while ``leading()`` says so.

    Example::

        rounds = DoctorRounds(3600.0, examine=jobmanager.doctor, leading=lambda: jm.is_leader)
        rounds.start()
        ...
        rounds.stop()
    """

    def __init__(
        self, interval: float, *, examine: Callable[[], object], leading: Callable[[], bool]
    ) -> None:
        self._interval = interval
        self._examine = examine
        self._leading = leading
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._interval <= 0:
            return
        self._thread = threading.Thread(target=self._run, name="doctor-rounds", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            if self._leading():
                self.round()

    def round(self) -> None:
        """One examination; its failure costs nothing but this round."""
        try:
            self._examine()
        except StewardError as exc:  # ZooKeeper or the storage unreachable: next round
            log.warning("doctor round failed error=%s", exc)

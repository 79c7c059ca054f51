"""The JobManager process: one ZooKeeper session, the election, the REST server, the Dispatcher.

Every JobManager serves the REST API. The one that leads also runs a :class:`Dispatcher` for
the term of its leadership; the others serve reads from ZooKeeper and forward writes to the
leader. A graceful stop (SIGTERM) releases leadership first, so a standby takes over at once
instead of waiting for the session to expire; running attempts are never stopped by a
JobManager going away (the next leader adopts them). A standby also runs a
:class:`CrashDetector`: when the leader's process has died but its host lives (its port
refuses connections), the standby removes the dead leader's latch and takes over without
waiting for the session to expire either.

Every JobManager runs a :class:`LivenessProbe` too. A leader none of whose ZooKeeper round
trips has worked for ``jobmanager.fence-after`` pauses its initialize hooks (kills the running
ones, starts none): with ``tolerate-suspended-connections`` it keeps its leadership until
kazoo reports LOST, which may come only when it reconnects, long after its session expired
and the next leader ran the same hooks. Hooks resume when a round trip of the same session
works again; a term whose session is gone never resumes them (docs/architecture.md,
"Timing chain").
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from urllib.parse import urlsplit

import uvicorn

from steward.config import Configuration
from steward.errors import ConfigurationError
from steward.ha.crash_detection import CrashDetector, is_wildcard
from steward.ha.election import LeaderElection, Leadership
from steward.ha.liveness import LivenessProbe
from steward.ha.retrieval import LeaderRetrieval
from steward.ha.session import Session
from steward.metrics import JobManagerMetrics
from steward.security.rate_limits import RateLimiter
from steward.store.blob import BlobStore
from steward.store.warm_records import WarmRecords
from steward.tls import contexts as tls
from steward.tls.serving import bind_listener, serve_on_thread
from steward.wire.doctor import DoctorReport
from steward.wire.records import LeaderInfo

from .app import create_app
from .doctor_rounds import DoctorRounds
from .events.journal import Journal
from .events.source import JobEventSource
from .hooks import HookRunner
from .index_follower import IndexFollower
from .leader.dispatcher import Dispatcher
from .reads import ClusterReader
from .rest.auth import ApiSecurity
from .rest.events import EventFeed
from .security import api_security

log = logging.getLogger(__name__)


class JobManager:
    def __init__(self, config: Configuration, jobmanager_id: str) -> None:
        self.config = config
        self.settings = settings = config.settings
        # TLS files are checked before anything starts: a bad one is a clear error at once.
        self._server_tls = tls.server_context(settings.tls) if settings.tls.enabled else None
        self.client_tls = tls.client_tls(settings.tls)
        """How this JobManager verifies the leader it forwards writes to."""
        self.id = jobmanager_id
        self.session = Session.from_config(config, name=jobmanager_id)
        self.metrics = JobManagerMetrics()
        self.security: ApiSecurity = dataclasses.replace(
            api_security(settings.security, self.session, settings.tls, settings.oidc),
            limiter=RateLimiter(settings.rate_limits, on_limited=self.metrics.limited),
        )
        self.blobs = BlobStore(settings.storage.storage_dir, on_error=self.metrics.storage_failed)
        self._socket = bind_listener(
            settings.jobmanager.bind_host, settings.jobmanager.port, port_key="jobmanager.port"
        )
        host, port = self._socket.getsockname()[:2]
        scheme = tls.scheme(settings.tls)
        self.address = settings.jobmanager.advertised_address or f"{scheme}://{host}:{port}"
        if urlsplit(self.address).scheme != scheme:
            self._socket.close()
            raise ConfigurationError(
                f"jobmanager.advertised-address {self.address} is not {scheme}:// while"
                f" rest.ssl.enabled is {str(settings.tls.enabled).lower()}",
                key="jobmanager.advertised-address",
            )
        if is_wildcard(urlsplit(self.address).hostname or ""):
            log.warning(
                "advertised address %s names no machine: standbys cannot forward to it and"
                " crash detection ignores it; set jobmanager.advertised-address",
                self.address,
            )
        self.reader = ClusterReader(self.session, self.blobs, jobmanager_id)
        self.events = JobEventSource(
            self.session, self.blobs, Journal(settings.jobmanager.events_buffer)
        )
        """Live job events: from watches (a standby), or from this leader's own writes."""
        self.index_follower = IndexFollower(
            self.reader.index, self.events.journal, self.reader.jobs, self.reader.job
        )
        """Keeps the job index that listings page through current from those events."""
        self.warm = WarmRecords(self.session) if settings.jobmanager.warm_standby else None
        """A standby's copy of every live job's pointer and record, for its recovery."""
        self.retrieval = LeaderRetrieval(self.session, self._leader_changed)
        self.doctor_rounds = DoctorRounds(
            settings.jobmanager.doctor_interval,
            examine=self.doctor,
            leading=self._leads_a_ready_term,
        )
        self._lock = threading.Lock()
        self._dispatcher: Dispatcher | None = None
        self._server: uvicorn.Server | None = None
        self._server_thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._workdir = settings.taskmanager.workdir / jobmanager_id
        self.election = self._new_election()
        self._hooks: HookRunner | None = None
        self._hooks_session: int | None = None
        self._cut_off_at: float | None = None
        self.probe = LivenessProbe(
            self.session, settings.jobmanager.fence_after, self._cut_off, self._answered
        )
        self.crash_detector: CrashDetector | None = None
        if settings.zookeeper.crash_detection > 0:
            self.crash_detector = CrashDetector(
                self.session,
                jobmanager_id,
                refused_for=settings.zookeeper.crash_detection,
                current_leader=self.leader,
                is_leader=lambda: self.is_leader,
            )

    # ------------------------------------------------------------------ state

    @property
    def dispatcher(self) -> Dispatcher | None:
        return self._dispatcher

    @property
    def is_leader(self) -> bool:
        dispatcher = self._dispatcher
        return dispatcher is not None and not dispatcher.stopped

    def _leads_a_ready_term(self) -> bool:
        """Leading and recovered: a doctor round never adds its reads to a recovery's."""
        dispatcher = self._dispatcher
        return dispatcher is not None and dispatcher.ready and not dispatcher.stopped

    def leader(self) -> LeaderInfo | None:
        return self.retrieval.leader

    def cluster_id(self) -> str:
        return self.settings.zookeeper.cluster_id

    def takeover_blocker(self) -> str | None:
        """Why this JobManager could not yet take over quickly if the leader crashed, or None.

        A standby is ready only once its latch is in line (a release reaches it), the leader
        is known, and its crash detector has seen that leader accept a probe (so the dead
        leader's refusals count): one that said ready earlier made a crash right after its
        start wait for the whole session timeout (issue 22).
        """
        leader = self.leader()
        if leader is None:
            return "no leader known"
        if leader.contender == self.id:
            return None if self.is_leader else "granted leadership; the term has not started"
        if not self.election.in_line:
            return "not yet in line for leadership (no latch node)"
        detector = self.crash_detector
        if detector is None or detector.armed_for(leader):
            return None
        if is_wildcard(leader_host(leader)):
            # A wildcard names no machine: no detector can ever probe this leader, so a crash
            # waits for its session whenever it happens (its own start warned of it). Never
            # ready would take a working standby out of every load balancer for nothing.
            return None
        return (
            f"the crash detector has not yet seen leader {leader.contender} at"
            f" {leader.address} accept a connection (epoch {leader.epoch})"
        )

    def doctor(self, *, verify_blobs: bool = False) -> DoctorReport:
        # Imported on the first examination (an admin's request, or a round an hour after the
        # start by default): the checks' modules cost every JobManager's start ~0.1 s of CPU.
        from steward.doctor import examine

        report = examine(
            self.session,
            self.blobs,
            self.cluster_id(),
            lost_writes=self.metrics.lost_writes(),
            served_by=self.id,
            verify_blobs=verify_blobs,
        )
        # Exported for the doctor alerts (deploy/prometheus/): the findings outlive the answer.
        severities = Counter(str(finding.severity) for finding in report.findings)
        self.metrics.doctor_examined(severities, time.time())
        return report

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> JobManager:
        self.session.start()
        self.probe.start()
        self.events.start()
        if self.warm is not None:
            self.warm.start()
        self.index_follower.start()
        self._start_server()
        self.retrieval.start()
        self.election.start()
        self.doctor_rounds.start()
        if self.crash_detector is not None:
            self.crash_detector.start()
        log.info("jobmanager started id=%s address=%s", self.id, self.address)
        return self

    def stop(self) -> None:
        """Graceful: give up leadership first (a standby takes over now), then shut down."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        log.info("jobmanager stopping id=%s", self.id)
        if self.crash_detector is not None:
            self.crash_detector.stop()
        self.election.stop()
        self.doctor_rounds.stop()
        with self._lock:
            dispatcher, self._dispatcher = self._dispatcher, None
        if dispatcher is not None:
            dispatcher.stop()
        self.retrieval.stop()
        self.probe.stop()
        self.events.stop()
        if self.warm is not None:
            self.warm.stop()
        self.index_follower.stop()
        self.events.journal.close()  # open streams end, so the server stops at once
        if self._server is not None:
            self._server.should_exit = True
        if self._server_thread is not None:
            self._server_thread.join(timeout=5)
        self.session.close()
        log.info("jobmanager stopped id=%s", self.id)

    def _granted(self, leadership: Leadership) -> None:
        log.info("leadership granted id=%s epoch=%d", self.id, leadership.epoch)
        hooks = HookRunner(
            self.config,
            self.blobs,
            self._workdir / "hooks",
            self.settings.jobmanager.recovery_parallelism,
        )
        dispatcher = Dispatcher(
            self.session,
            leadership,
            self.config,
            blobs=self.blobs,
            jobmanager_id=self.id,
            hooks=hooks,
            on_fenced=self._fenced,
            metrics=self.metrics,
            address=self.address,
            feed=self.events,
            warm=self.warm,
        )
        self.events.lead()
        self.metrics.leadership_grants.inc()
        with self._lock:
            previous, self._dispatcher = self._dispatcher, dispatcher
            self._hooks, self._hooks_session = hooks, self.session.session_id
            cut_off = self._cut_off_at is not None
        if cut_off:
            hooks.pause("zookeeper has not answered since before this term began")
        if previous is not None:
            previous.stop()
        dispatcher.start()

    # ------------------------------------------------------------------ liveness

    def _leader_changed(self, _leader: LeaderInfo | None) -> None:
        if self.crash_detector is not None:
            self.crash_detector.leader_changed()

    def _cut_off(self, reason: str) -> None:
        """No ZooKeeper round trip worked for jobmanager.fence-after: stop every hook."""
        with self._lock:
            self._cut_off_at = time.monotonic()
            hooks = self._hooks
        log.error("cut off from zookeeper id=%s reason=%s", self.id, reason)
        if hooks is not None:
            hooks.pause(reason)

    def _answered(self, probe_started: float) -> None:
        """A round trip that started after the cut-off worked: this term's hooks may run
        again, if the term's session is still the one that answered."""
        self.metrics.zookeeper_round_trip.observe(time.monotonic() - probe_started)
        with self._lock:
            if self._cut_off_at is None or probe_started <= self._cut_off_at:
                return
            self._cut_off_at = None
            hooks, same_session = self._hooks, self._hooks_session == self.session.session_id
        log.warning("zookeeper answers again id=%s same_session=%s", self.id, same_session)
        if hooks is not None and same_session:
            hooks.resume()

    def _revoked(self, leadership: Leadership) -> None:
        log.warning("leadership revoked id=%s epoch=%d", self.id, leadership.epoch)
        with self._lock:
            dispatcher = self._dispatcher
            if dispatcher is not None and dispatcher.epoch == leadership.epoch:
                self._dispatcher = None
            else:
                dispatcher = None
        if dispatcher is not None:
            dispatcher.stop()
            self.events.follow()
            self._follow_warm()

    def _follow_warm(self) -> None:
        """Keep the records again for a next term; not while stopping (re-reading every job
        would only take CPU from the successor's takeover on a shared host)."""
        if self.warm is not None and not self._stopping.is_set():
            self.warm.follow()

    def _fenced(self) -> None:
        """The Dispatcher stopped itself (a fenced write, or recovery failed): step down.

        Leaving the election and joining again hands leadership to a standby (or back to
        us with a new epoch) instead of keeping a leader that does nothing.
        """
        with self._lock:
            dispatcher = self._dispatcher
            if dispatcher is not None and dispatcher.stopped:
                self._dispatcher = None
                self.events.follow()
                self._follow_warm()
        threading.Thread(target=self._rejoin, name=f"{self.id}-rejoin", daemon=True).start()

    def _rejoin(self) -> None:
        if self._stopping.is_set():
            return
        log.warning("leaving and rejoining the election id=%s", self.id)
        self.election.stop()
        if self._stopping.is_set():
            return
        self.election = self._new_election()
        self.election.start()

    def _new_election(self) -> LeaderElection:
        return LeaderElection(
            self.session,
            self.id,
            self.address,
            tolerate_suspended=self.settings.zookeeper.tolerate_suspended,
            on_granted=self._granted,
            on_revoked=self._revoked,
        )

    # ------------------------------------------------------------------ REST server

    def _start_server(self) -> None:
        feed = EventFeed(self.events.journal, self.settings.jobmanager.events_keep_alive)
        app = create_app(
            self,
            self.security,
            client_tls=self.client_tls,
            event_feed=feed,
            job_metrics=self.metrics,
        )
        self._server, self._server_thread = serve_on_thread(
            app,
            self._socket,
            (self.settings.tls, self._server_tls),
            thread_name=f"{self.id}-rest",
            trusted_proxies=self.settings.jobmanager.trusted_proxies,
        )


def leader_host(leader: LeaderInfo) -> str:
    try:
        return urlsplit(leader.address).hostname or ""
    except ValueError:
        return ""

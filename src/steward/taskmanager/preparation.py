"""Preparing an attempt: from a leader's start command to a runner's launch document.

This module owns the slow, fallible half of starting an attempt, which runs on a launch
worker (never on the heartbeat thread): fetch the job graph blob (checked against the
command's sha256), unpack its artifact under ``<workdir>/<job-id>/<attempt>/artifact``, and
fetch the files the job names into the host's cache and build its Python environment
(:mod:`~steward.taskmanager.dependency_cache`, :mod:`~steward.taskmanager.environments`), and
build the :class:`~steward.wire.runner_protocol.LaunchDocument`. Anything wrong with the job's
data is a :class:`~steward.errors.StewardError` whose message says what; the caller turns it
into the attempt's failed outcome (permanent when the error's class says so).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from steward.artifacts.pipeline import materialize
from steward.config import Configuration
from steward.errors import CorruptStateError
from steward.sparkconf.event_log import event_log_dir
from steward.store.blob import BlobRef, BlobStore
from steward.store.contents import ContentStore
from steward.supervisor.os_user import OsUser
from steward.taskmanager.dependency_cache import CACHE_DIR, DependencyCache
from steward.taskmanager.environments import Environments
from steward.taskmanager.private_dirs import PRIVATE_DIR_MODE, TRAVERSABLE_DIR_MODE, private_dir
from steward.taskmanager.proxy_users import (
    DEPENDENCIES_FOLDER,
    WORKING_FOLDER,
    hand_over,
    own_copies,
    resolve,
)
from steward.taskmanager.scratch import scratch_dir
from steward.wire.heartbeat import StartAttempt
from steward.wire.jobs import JobGraph, JobSpec
from steward.wire.runner_protocol import LaunchDocument, RunMode

log = logging.getLogger(__name__)

SPARK_MASTER_CONF = "spark.master"
LOG_FILE = "runner.log"


def attempt_log(workdir: Path, taskmanager_id: str, job_id: str, attempt: int) -> Path:
    """Where an attempt's log is on its TaskManager's host (``workdir``: taskmanager.workdir)."""
    return workdir / taskmanager_id / job_id / str(attempt) / LOG_FILE


@dataclass(frozen=True)
class Launch:
    """Everything a runner process of one attempt needs."""

    document: LaunchDocument
    attempt_dir: Path
    log_path: Path
    spec: JobSpec
    user: OsUser | None = None
    """The OS user the runner runs as (the job's ``proxy_user``); None: this process's."""

    @property
    def scratch_dir(self) -> Path:
        """The attempt's temporary files (:mod:`steward.taskmanager.scratch`)."""
        return scratch_dir(self.attempt_dir)

    @property
    def working_dir(self) -> Path:
        """The runner's working directory: the attempt's folder, or a proxy user's own folder
        inside it (:func:`~steward.taskmanager.proxy_users.hand_over`)."""
        return self.attempt_dir if self.user is None else self.attempt_dir / WORKING_FOLDER


class Preparation:
    """Prepares attempts of this TaskManager under ``workdir`` (``<taskmanager.workdir>/<id>``)."""

    def __init__(self, config: Configuration, blobs: BlobStore, workdir: Path) -> None:
        self._blobs = blobs
        self._workdir = workdir
        settings = config.settings
        self._spark_master = settings.spark.master
        self._deadman_timeout = settings.taskmanager.deadman_timeout
        self.event_log_dir = event_log_dir(settings.history, settings.storage.storage_dir)
        # Shared by every TaskManager of the host that uses the same taskmanager.workdir.
        cache = settings.taskmanager.workdir.resolve() / CACHE_DIR
        # Not taskmanager.workdir itself: it may be a shared folder (/tmp), left as it is.
        self._private = (workdir, cache)
        self._grants = settings.security.proxy_users
        # A proxy user's driver reaches its folder by its path: the folders above it are
        # traversable then, never listable (docs/security.md#proxy-users).
        self._dir_mode = TRAVERSABLE_DIR_MODE if self._grants else PRIVATE_DIR_MODE
        self._dependencies = DependencyCache(ContentStore(blobs), cache)
        self._environments = Environments(cache)

    def attempt_dir(self, job_id: str, attempt: int) -> Path:
        return self._workdir / job_id / str(attempt)

    def prepare(self, command: StartAttempt) -> Launch:
        """Fetch, check and unpack the job; raises BlobStoreError, CorruptStateError or
        ArtifactRejectedError."""
        payload = self._blobs.get(BlobRef(command.job_graph_blob, command.job_graph_sha256))
        graph = JobGraph.from_json(payload)
        spec = graph.spec
        if spec.job_id != command.job_id:
            raise CorruptStateError(
                f"job graph {command.job_graph_blob} is of job {spec.job_id!r},"
                f" not {command.job_id!r}"
            )
        # Before anything is fetched or the lease taken: a user this host cannot switch to
        # fails the attempt at once, for good.
        user = resolve(spec.proxy_user, self._grants) if spec.proxy_user else None
        attempt_dir = self.attempt_dir(command.job_id, command.attempt)
        # The job's code, settings and data are this user's alone (mode 0700 folders).
        workdir, cache = self._private
        private_dir(workdir, self._dir_mode)
        private_dir(cache)
        private_dir(attempt_dir.parent, self._dir_mode)
        private_dir(attempt_dir)
        private_dir(scratch_dir(attempt_dir))  # before hand_over: a proxy user's too
        artifact_path = materialize(graph.artifact, attempt_dir / "artifact", spec.entrypoint)
        dependencies = [self._dependencies.fetch(d) for d in spec.dependencies]
        if user is not None:
            dependencies = own_copies(dependencies, attempt_dir / DEPENDENCIES_FOLDER)
            hand_over(attempt_dir, user)
        python_env = self._environments.python_env(spec, dependencies)
        try:
            document = LaunchDocument(
                job_id=command.job_id,
                attempt=command.attempt,
                epoch=command.epoch,
                mode=RunMode.MAIN,
                is_recovery=command.is_recovery,
                spec=spec,
                artifact_path=str(artifact_path),
                checkpoint_dir=command.checkpoint_dir,
                spark_master=spec.spark_conf.get(SPARK_MASTER_CONF) or self._spark_master,
                completed_stages=command.completed_stages,
                last_checkpoint=command.last_checkpoint,
                deadman_timeout=self._deadman_timeout,
                dependencies=dependencies,
                python_env=python_env,
                earlier_spark_apps=command.earlier_spark_apps,
                event_log_dir=self.event_log_dir,
            )
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "launch document"
            raise CorruptStateError(
                f"cannot launch job {command.job_id!r}: {where}: {first['msg']}"
            ) from exc
        log.info(
            "attempt prepared job=%s attempt=%d artifact=%s",
            command.job_id,
            command.attempt,
            artifact_path,
        )
        return Launch(document, attempt_dir, attempt_dir / LOG_FILE, spec, user)

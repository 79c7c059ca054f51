"""A job's files as Steward handles them: its pipeline code and its archives, checked on the way
in (the JobManager, at submission) and unpacked on the way out (the TaskManager before an
attempt, the leader before an ``initialize`` hook), by the same rules on both sides; and the
folders of its checkpoint dir, which the runner writes and the leader deletes.

- :mod:`~steward.artifacts.programs`: how a job's code is laid out (its entry module) and
  whether its entry file is a spark-submit script or an SDK pipeline; the runner reads the same
  definitions.
- :mod:`~steward.artifacts.pipeline`: a pipeline's code (a ``.py`` file or a zipped folder)
  checked and built into an :class:`~steward.wire.jobs.Artifact`, and materialized into a work
  directory.
- :mod:`~steward.artifacts.checked`: pipelines already checked, so the same file is not checked
  again.
- :mod:`~steward.artifacts.archives`: ``--archives`` (zip and tar) inspected and unpacked safely.
- :mod:`~steward.artifacts.checkpoint_dirs`: paths and moves under a job's checkpoint dir (the
  runner's stages; the leader names the dir and deletes it when the job is cleaned up).

Artifact code that only one side runs lives on that side: the client zips a folder
(:mod:`steward.client.packaging`), the REST layer answers 400 for a bad archive
(:mod:`steward.jobmanager.rest.archive_checks`), and the runner imports a pipeline from its
unpacked artifact (:mod:`steward.runtime.artifact`).

This package imports only :mod:`steward.wire` and :mod:`steward.errors` (and fsspec): the
JobManager, the TaskManager and the runner may all import it, and it imports none of them.
"""

"""The runtime: the runner (the child process that runs one attempt) and the pipeline SDK.

Modules, by what they own:

- :mod:`~steward.wire.runner_protocol`: the wire format between a TaskManager and a runner
  (launch document, events, exit codes, SIGTERM); read it first.
- :mod:`~steward.runtime.runner`: the runner process, ``python -m steward.runtime.runner``.
- :mod:`~steward.runtime.deadman`: stdin, the dead-man's switch, killing the process group.
- :mod:`~steward.runtime.channel`: the thread-safe writer of the events pipe.
- :mod:`~steward.runtime.artifact`: finding and importing a pipeline's code.
- :mod:`~steward.runtime.context`: :class:`JobContext`, what a pipeline's ``main(ctx)`` gets.
- :mod:`~steward.runtime.spark`: the SparkSession and micro-batch reports (imports pyspark).
- :mod:`~steward.runtime.script`: spark-submit scripts (told from SDK pipelines by
  :mod:`steward.artifacts.programs`).
- :mod:`~steward.sparkconf.session_settings`, :mod:`~steward.runtime.app_watch`,
  :mod:`~steward.runtime.connect`, :mod:`~steward.runtime.standalone`: the attempt's Spark
  settings, its Spark application, Spark Connect sessions, and earlier attempts'
  applications on a standalone master.
- :mod:`~steward.runtime.dependencies`, :mod:`~steward.runtime.outcomes`: a job's files
  before user code, its outcome. Which jobs may use a warm spare is decided by the TaskManager
  and applied here by the same rule (:mod:`steward.wire.warm`).

The parent's side (starting and supervising a runner) is :mod:`steward.supervisor`.

Importing this package does not import pyspark.
"""

from steward.runtime.context import JobContext

__all__ = ["JobContext"]

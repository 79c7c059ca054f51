"""The runtime: the runner (the child process that runs one attempt) and the pipeline SDK.

Modules, by what they own:

- :mod:`~steward.runtime.protocol`: the wire format between a TaskManager and a runner
  (launch document, events, exit codes, SIGTERM); read it first.
- :mod:`~steward.runtime.runner`: the runner process, ``python -m steward.runtime.runner``.
- :mod:`~steward.runtime.deadman`: stdin, the dead-man's switch, killing the process group.
- :mod:`~steward.runtime.channel`: the thread-safe writer of the events pipe.
- :mod:`~steward.runtime.artifact`: finding and importing a pipeline's code.
- :mod:`~steward.runtime.context`: :class:`JobContext`, what a pipeline's ``main(ctx)`` gets.
- :mod:`~steward.runtime.spark`: the SparkSession and micro-batch reports (imports pyspark).
- :mod:`~steward.runtime.storage`: paths and moves under a job's checkpoint dir.

Importing this package does not import pyspark.
"""

from steward.runtime.context import JobContext

__all__ = ["JobContext"]

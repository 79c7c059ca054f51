"""The parent's side of running user code, shared by the TaskManager (attempts) and the
JobManager (``initialize`` hooks): starting a runner and driving it to its end, holding its
processes together and reaping them, capping its log.

- :mod:`~steward.supervisor.runner_process`: :class:`RunnerProcess`, one runner from spawn to
  its final event.
- :mod:`~steward.supervisor.process_group`: an attempt's process group, signalled and waited as
  one.
- :mod:`~steward.supervisor.containment`, :mod:`~steward.supervisor.reaping`: cgroups and the
  subreaper; finding and SIGKILLing every process of an attempt.
- :mod:`~steward.supervisor.logcap`: the attempt log's size cap.
- :mod:`~steward.supervisor.detached`: processes started detached (the managed ZooKeeper, a
  local cluster), signalled only if they are still ours.

The runner (:mod:`steward.runtime`, the child) uses containment and reaping for its dead-man's
switch; nothing here imports the JobManager or the TaskManager.
"""

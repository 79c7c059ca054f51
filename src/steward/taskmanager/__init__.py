"""The TaskManager: runs job attempts as process groups, each behind an execution lease.

The safety core (DESIGN rules 3 and 4):

- ``leases.py``: execution leases, the ephemeral ``executions/<job-id>`` znodes;
- ``process_group.py``: one attempt's processes (runner and Spark JVM) as one process group;
- ``executions.py``: the attempts this TaskManager runs, and their clean-up;
- ``self_fencing.py``: killing every attempt when the ZooKeeper session is suspended too long;
- ``liveness.py``: the same when no ZooKeeper round trip has worked for too long (a frozen
  server or a cut network, which kazoo notices late).

The process around it (``steward taskmanager``):

- ``process.py``: the TaskManager, wiring the parts and reacting to the leader's commands;
- ``attempts.py``: what is reported to the leader per attempt, until acknowledged;
- ``launcher.py``: from a start command to a launch document (job graph, artifact);
- ``heartbeater.py``: the HTTP heartbeats to the leader;
- ``registration.py``: the ephemeral ``taskmanagers/<tm-id>`` znode.

The runner process itself is driven by :mod:`steward.runtime.driver`.
"""

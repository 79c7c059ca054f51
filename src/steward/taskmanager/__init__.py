"""The TaskManager: runs job attempts as process groups, each behind an execution lease.

This package owns the TaskManager's safety core (DESIGN rules 3 and 4):

- ``leases.py``: execution leases, the ephemeral ``executions/<job-id>`` znodes;
- ``process_group.py``: one attempt's processes (runner and Spark JVM) as one process group;
- ``executions.py``: the attempts this TaskManager runs, and their clean-up;
- ``self_fencing.py``: killing every attempt when ZooKeeper is out of reach for too long.
"""

"""The TaskManager: runs job attempts as process groups, each behind an execution lease.

The safety core (rules 3 and 4 of docs/architecture.md), with the execution leases of
:mod:`steward.store.leases` and the process groups of :mod:`steward.supervisor.process_group`:

- ``execution.py``: the attempts this TaskManager runs, and their clean-up;
- ``self_fencing.py``: killing every attempt when the ZooKeeper session is suspended too long;
- the liveness probe (:mod:`steward.ha.liveness`): the same when no ZooKeeper round trip has
  worked for too long (a frozen server or a cut network, which kazoo notices late).

The process around it (``steward taskmanager``), a start command's steps in order:

- ``manager.py``: the TaskManager, building the parts and routing their events (``events.py``);
- ``admission.py``: a leader's reply applied: acks, a start admitted or refused, a cancel;
- ``launches.py``: an admitted attempt prepared, then executed, on a launch worker;
- ``preparation.py``: from a start command to a launch document (job graph, artifact);
- ``reporting.py``: what is reported to the leader per attempt, until acknowledged;
- ``heartbeat_sender.py``: the sending side of the heartbeat (reports out, replies in);
- ``registration.py``: the ephemeral ``taskmanagers/<tm-id>`` znode.

The runner process itself is driven by :mod:`steward.supervisor.runner_process`.
"""

"""Testing kits shared by Steward's tests, chaos suite and benchmarks (as ``kazoo.testing``).

- :mod:`~steward.testing.waiting`: ``wait_until``, a poll with a deadline (never a sleep as
  synchronisation);
- :mod:`~steward.testing.ports`: free loopback ports, for one server or a ZooKeeper ensemble;
- :mod:`~steward.testing.spawning`: a child process in its own group, its output in a log, and
  ``pid_alive``;
- :mod:`~steward.testing.zookeeper`: managed ZooKeeper servers started, healed, restarted;
- :mod:`~steward.testing.processes`: JobManagers and TaskManagers as real processes;
- :mod:`~steward.testing.attempts`, :mod:`~steward.testing.records`: a start command and
  status records for tests of the logic around them;
- :mod:`~steward.testing.spark`, :mod:`~steward.testing.standalone`,
  :mod:`~steward.testing.connect_server`: Spark daemons from the installed pyspark.

Nothing in the control plane or the runtime imports this package, and it does not import
pytest (the benchmarks use it without).
"""

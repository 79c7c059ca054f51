"""The local cluster of ``steward cluster start|status|stop``: a whole Steward cluster on one
machine (a managed ZooKeeper unless a quorum is configured, N JobManagers, M TaskManagers), run
in the background from a state directory ``.steward/``.

- ``workdir.py``: the state directory's layout and ``cluster.json``;
- ``hosts.py``: the ``masters`` and ``workers`` files;
- ``launcher.py``: starting, identifying and stopping the processes;
- ``local.py``: :class:`LocalCluster`, which puts them together.
"""

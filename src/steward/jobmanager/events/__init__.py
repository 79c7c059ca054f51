"""Live job events on every JobManager: :mod:`.source` watches the records the leader writes
in ZooKeeper, :mod:`.journal` keeps the last events and wakes the REST streams
(:mod:`steward.jobmanager.rest.events`)."""

"""What crosses a process boundary, in one place: the JSON that Steward's processes exchange
and persist.

- :mod:`~steward.wire.values`: the strict, frozen base models and versioned payloads; job ids.
- :mod:`~steward.wire.jobs`: what a user submits (:class:`JobSpec`) and the stored job graph.
- :mod:`~steward.wire.states`: every state enum (job, attempt, result, attempt phase).
- :mod:`~steward.wire.records`: what is persisted in ZooKeeper and the stores.
- :mod:`~steward.wire.rest`: the REST API's bodies.
- :mod:`~steward.wire.heartbeat`: TaskManager <-> leader heartbeats, commands and outcomes.
- :mod:`~steward.wire.runner_protocol`: a TaskManager <-> runner launch document and events.
- :mod:`~steward.wire.spark_options`: spark-submit's options and the Spark keys they set.
- :mod:`~steward.wire.warm`: which jobs may run on a warm spare runner (TaskManager and runner).

It depends on pydantic and :mod:`steward.errors` only; every other layer may import it.
"""

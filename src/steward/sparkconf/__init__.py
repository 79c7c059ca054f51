"""Spark settings that both sides agree on, below the JobManager, the TaskManager and the
runner alike: where attempts write their event logs and the History Server's links to them
(:mod:`.event_log`), and how an attempt's settings reach every session its code builds
(:mod:`.session_settings`). Nothing here imports pyspark."""

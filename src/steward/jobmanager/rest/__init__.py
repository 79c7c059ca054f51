"""The REST API every JobManager serves: one router per concern over a narrow interface.

:mod:`.app` builds the FastAPI application; the routers (:mod:`.jobs`, :mod:`.cluster`,
:mod:`.internal`, :mod:`.contents`, :mod:`.health`) ask their JobManager only what
:class:`~.backend.ApiBackend` lists, handed to them through the app's state (:mod:`.state`).
:mod:`.errors` maps every failure to an ``ErrorBody``; :mod:`.forwarding` carries a standby's
writes to the leader; :mod:`.submission` turns a submission's body into a stored job.
"""

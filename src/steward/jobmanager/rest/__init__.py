"""The REST API every JobManager serves: one router per concern over a narrow interface.

The routers (:mod:`.jobs`, :mod:`.cluster`, :mod:`.internal`, :mod:`.contents`, :mod:`.health`)
ask their JobManager only what :class:`~.backend.ApiBackend` lists, handed to them through the
app's state (:mod:`.state`); :func:`steward.jobmanager.app.create_app`, above this package and
the UI's, mounts them. :mod:`.errors` maps every failure to an ``ErrorBody``; :mod:`.forwarding`
carries a standby's writes to the leader; :mod:`.jobs_submit` turns a submission's body into a
stored job.
"""

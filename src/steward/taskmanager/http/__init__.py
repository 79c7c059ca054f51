"""The TaskManager's HTTP port: its attempts' logs (:mod:`.logs`), its probes, behind the same
authentication as the JobManagers' API (:class:`steward.security.asgi.AuthMiddleware`).

:mod:`.app` builds the ASGI app (Starlette) from one list of routes, :mod:`.server` binds and
serves it, :mod:`.files` finds and streams the log files.
"""

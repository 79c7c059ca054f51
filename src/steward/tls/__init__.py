"""TLS of the REST API (``rest.ssl.*``; docs/security.md, "TLS").

A layer above ``config`` and below everything that serves or calls the REST API:

- :mod:`.contexts`: a JobManager's server context, checked at start, and the one every client
  (CLI, ``steward.Client``, TaskManagers' heartbeats, standby forwarding, the local cluster's
  probes, the testing kit) verifies JobManagers with;
- :mod:`.certificates`: a private CA and a JobManager certificate for a cluster on this
  machine (``steward cluster start --tls``), made with the ``cryptography`` package.
"""

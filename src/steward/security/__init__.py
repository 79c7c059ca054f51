"""Who may do what: access tokens, roles, the caller's identity, the cluster's internal
credential, credential files and the audit log.

A layer above ``wire``/``ha``/``store`` and below the JobManager, the client, the local cluster
and the CLI (docs/security.md):

- :mod:`.tokens`: ``stw_<id>_<secret>`` tokens, minted, parsed and checked against their hash;
- :mod:`.roles`: viewer, submitter, admin (and the TaskManagers' internal role) and what each
  may do;
- :mod:`.identity`: who is asking (name, role, token id);
- :mod:`.authenticator`: a bearer token into an identity, against ZooKeeper (short cache);
- :mod:`.credentials`: the credential files (mode 0600) and how a client finds its token;
- :mod:`.provision`: the credentials of a new cluster (``steward cluster start``, the kit);
- :mod:`.audit`: one JSON line per submit, cancel, token create and revoke.
"""

"""The client side: :class:`Client` (submit, follow, cancel), finding a leader and failing over,
and packing a job's code and files for submission.

- :mod:`~steward.client.client`: :class:`Client`, the Python API the CLI is built on.
- :mod:`~steward.client.failover`: one request, retried across JobManagers and leader changes.
- :mod:`~steward.client.discovery`: where the JobManagers are (addresses, ZooKeeper, a local
  cluster's folder).
- :mod:`~steward.client.packaging`: a pipeline's code as an artifact.
- :mod:`~steward.client.job_files`, :mod:`~steward.client.file_hashes`: the files a job
  carries, uploaded once by content hash.
- :mod:`~steward.client.listing`: listing jobs page by page, with filters (:class:`JobFilter`).
"""

from steward.client.client import Client
from steward.client.errors import JobTerminatedError
from steward.client.listing import JobFilter

__all__ = ["Client", "JobFilter", "JobTerminatedError"]

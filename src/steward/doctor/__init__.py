"""``steward doctor``: checks a cluster's HA state against the invariants it stands on.

:mod:`.snapshot` reads the state once; :mod:`.state_checks` checks the records (pointers,
results, leases, attempts, blobs, epochs); :mod:`.zookeeper_checks` the servers and the
session; :mod:`.examine` runs them all into a :class:`~steward.wire.doctor.DoctorReport`.
"""

from .examine import examine
from .state_checks import Limits

__all__ = ["Limits", "examine"]

"""``GET /v1/doctor``: what ``steward doctor`` finds, answered by any JobManager (viewer).

The JobManager asked reads the HA state on its own session, so a standby answers while
there is no leader, which is when an operator most wants to know. It reads every record
once (a request costs about one recovery's reads of ZooKeeper, and one listing of the blob
storage; ``?verify_blobs=true`` reads every blob back too), which is why the UI asks only when
its page opens or when asked again.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from steward.errors import StewardError
from steward.security.roles import Action
from steward.wire.doctor import DoctorQuery, DoctorReport
from steward.wire.rest import ErrorBody

from .auth import Caller, require
from .errors import raise_for
from .state import Backend

router = APIRouter(tags=["cluster"])


@router.get("/v1/doctor", responses={403: {"model": ErrorBody}, 503: {"model": ErrorBody}})
def doctor(
    backend: Backend, caller: Caller, query: Annotated[DoctorQuery, Query()]
) -> DoctorReport:
    """Every broken invariant of the HA state, with what to do; empty findings: all hold.

    ``verify_blobs``: also read every job graph and checkpoint blob back and check its
    checksum (one read per blob; without it, blobs are looked for in the storage's listing).
    """
    require(caller, Action.READ)
    try:
        return backend.doctor(verify_blobs=query.verify_blobs)
    except StewardError as exc:
        raise_for(exc)

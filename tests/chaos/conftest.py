"""Fixtures of the chaos suite: a short seeded campaign's settings for the CI run.

The campaign itself (cluster, workload, nemesis, checker) lives in the modules beside this
file; tests/chaos/campaign.py is also the entry point of scripts/chaos.sh.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from chaos.campaign import CampaignSettings
from chaos.nemesis import FAILOVER_KINDS, INFRA_KINDS, NETWORK_KINDS, PROCESS_KINDS
from chaos.workload import WorkloadSettings

CI_SEED = 20261121


def namespaces_available() -> bool:
    """Root with ``ip`` and ``tc``: members can get hosts of their own (network faults)."""
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in ("ip", "tc"))


@pytest.fixture
def short_campaign(tmp_path: Path) -> CampaignSettings:
    """75 s of faults every ~3.5 s per lane, plain pipelines only (no JVM: CI time). Where
    network namespaces can be made, every member is on a host of its own and the network
    faults are drawn too; ``STEWARD_CHAOS_NETWORK=0`` keeps it on one host (docs/reliability.md
    tells why it was off for a while: bugs 5 and 6)."""
    network = namespaces_available() and os.environ.get("STEWARD_CHAOS_NETWORK") != "0"
    return CampaignSettings(
        network=network,
        kinds=PROCESS_KINDS + INFRA_KINDS + (NETWORK_KINDS if network else ()),
        seed=CI_SEED,
        duration=75.0,
        workdir=tmp_path / "campaign",
        fault_interval=3.5,
        workload=WorkloadSettings(
            in_flight=6, short_seconds=(1.0, 4.0), long_seconds=(10.0, 20.0), spark_share=0.0
        ),
        quiesce_timeout=180.0,
    )


@pytest.fixture
def failover_campaign(tmp_path: Path) -> CampaignSettings:
    """60 s of the faults around a failover alone (issue 23): the storage stalled while the
    leader is killed, a standby's forward cut after the leader stored the job. On one host,
    the storage on moto's S3 server (what stalls)."""
    pytest.importorskip("s3fs", reason="s3:// needs s3fs (pip install steward[s3])")
    pytest.importorskip("moto", reason="the S3 server is moto's (the dev extra)")
    return CampaignSettings(
        storage="s3",
        kinds=FAILOVER_KINDS,
        fault_cycle=True,  # 60 s holds two or three such faults: each kind must be one
        seed=CI_SEED,
        duration=60.0,
        workdir=tmp_path / "campaign",
        fault_interval=3.5,
        workload=WorkloadSettings(
            in_flight=4, short_seconds=(1.0, 4.0), long_seconds=(10.0, 20.0), spark_share=0.0
        ),
        quiesce_timeout=180.0,
    )

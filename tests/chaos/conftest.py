"""Fixtures of the chaos suite: a short seeded campaign's settings for the CI run.

The campaign itself (cluster, workload, nemesis, checker) lives in the modules beside this
file; tests/chaos/campaign.py is also the entry point of scripts/chaos.sh.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from chaos.campaign import CampaignSettings
from chaos.workload import WorkloadSettings

CI_SEED = 20261121


@pytest.fixture
def short_campaign(tmp_path: Path) -> CampaignSettings:
    """75 s of faults every ~3.5 s per lane, plain pipelines only (no JVM: CI time)."""
    return CampaignSettings(
        seed=CI_SEED,
        duration=75.0,
        workdir=tmp_path / "campaign",
        fault_interval=3.5,
        workload=WorkloadSettings(
            in_flight=6, short_seconds=(1.0, 4.0), long_seconds=(10.0, 20.0), spark_share=0.0
        ),
        quiesce_timeout=180.0,
    )

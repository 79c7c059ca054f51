"""The provider's pure modules (no Airflow import) run in Steward's own venv: its sources are
put on ``sys.path`` here, as Airflow's venv would have them installed."""

from __future__ import annotations

import sys
from pathlib import Path

SOURCES = Path(__file__).resolve().parents[3] / "integrations" / "airflow" / "src"
if str(SOURCES) not in sys.path:
    sys.path.insert(0, str(SOURCES))

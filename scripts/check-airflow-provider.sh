#!/usr/bin/env bash
# mypy --strict of the Airflow provider (integrations/airflow) against the real Airflow it runs
# in: the end-to-end tests' cached venv (tests/e2e/airflow_provider/airflow_env.py), built here
# if it is missing, as the default test run would build it. Its mypy cache is MYPY_CACHE_DIR if set
# (scripts/test.sh sets one outside the clone), else integrations/airflow/.mypy_cache: about 1 s
# once warm, about 26 CPU-seconds from cold.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${STEWARD_PYTHON:-$PWD/.venv/bin/python}
airflow_python=$("$python" -c '
import sys
sys.path.insert(0, "tests")
from e2e.airflow_provider.airflow_env import airflow_venv
print(airflow_venv().bin / "python")
')
cd integrations/airflow
"$python" -m mypy --python-executable "$airflow_python"

#!/usr/bin/env bash
# Set up (idempotently) and run the demo: a local HA cluster (managed ZooKeeper, 2 JobManagers,
# 2 TaskManagers) runs the PySpark word count while its leading JobManager is SIGKILLed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/steward demo "$@"

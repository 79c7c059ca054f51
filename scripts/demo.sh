#!/usr/bin/env bash
# Set up (idempotently) and run the demo: a managed ZooKeeper, three JobManager contenders,
# the leader killed with SIGKILL, the next one taking over with a higher epoch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/steward demo "$@"

#!/usr/bin/env bash
# Run one chaos campaign against a local Steward cluster (3 ZooKeeper servers, 3 JobManagers,
# 3 TaskManagers as real processes) and check the invariants afterwards.
#
#   scripts/chaos.sh --seed 7 --duration 30m --out docs/reliability/campaign.json
#
# Options: --spark-share F (share of PySpark jobs, default 0.05), --fault-interval S (mean
# seconds between faults per nemesis lane, default 8), --session-timeout S (default 4),
# --in-flight N (jobs kept in flight, default 6), --workdir DIR, --keep-workdir.
# Prints progress while it runs, writes the JSON summary to --out, exits 1 on any violation.
# Needs root for the storage fault (a read-only bind mount); without it that fault is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/tests${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/python -m chaos.campaign "$@"

#!/usr/bin/env bash
# Set up (idempotently) and run every check CI runs: format, lint, types, tests.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m slow` or `scripts/test.sh -k election`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "[test] ruff format --check";  ruff format --check -q src tests benchmarks integrations
echo "[test] ruff check";           ruff check -q src tests benchmarks integrations
echo "[test] mypy --strict src";    mypy
echo "[test] mypy --strict integrations/airflow (against Airflow)"; scripts/check-airflow-provider.sh
echo "[test] lint-imports";         lint-imports --no-cache --no-logo  # layer contracts: pyproject.toml
# Bytecode written once: with PYTHONDONTWRITEBYTECODE set, each of the hundreds of processes the
# tests start would compile Steward's sources again (~0.35 s CPU a JobManager; docs/performance.md).
echo "[test] compileall src";       python -m compileall -q src
echo "[test] pytest";               pytest "$@"

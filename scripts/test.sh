#!/usr/bin/env bash
# Set up (idempotently) and run every check CI runs: format, lint, types, tests.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m slow` or `scripts/test.sh -k election`.
#
# The static checks (ruff, mypy, the import contracts) run beside pytest rather than before it:
# the test run leaves part of the cores idle (its workers wait on processes and timeouts), and
# the checks' minute of CPU fits there. Their output is printed once pytest ends, and a failed
# check fails the run as a failed test does.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-compile
export PATH="$PWD/.venv/bin:$PATH"
# Bytecode written once, by whichever process first imports a module: with PYTHONDONTWRITEBYTECODE
# set (this machine sets it), each of the hundreds of processes the tests start would compile
# what it imports again (a JobManager's imports cost 3.0 s of CPU instead of 1.5 s that way;
# docs/performance.md, "Start-up cost"). The installed packages are not compiled ahead
# (`setup.sh --no-compile`): a run imports less than half of them. Steward's own sources are,
# beside the assertion cache below, since every process imports them from its first second.
unset PYTHONDONTWRITEBYTECODE
echo "[test] compileall src";       python -m compileall -q src &
compiling=$!
# pytest's rewritten test modules, written once for every worker (tests/assertion_cache.py says
# why: each xdist worker collects the whole suite and would rewrite it all again).
python tests/assertion_cache.py
wait "$compiling"

# mypy's caches live outside the clone, per machine user, like uv's and pip's: a fresh clone's
# run then checks only what changed (the two strict runs cost ~48 s of CPU from cold, ~2 s
# warm, and that CPU is taken from the tests beside them). mypy validates each cached module
# by its source's hash, so a cache written by another clone or commit is never taken for a
# changed file. Set MYPY_CACHE_DIR to use another folder.
mypy_cache=${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/steward/mypy}
mkdir -p "$mypy_cache/src" "$mypy_cache/airflow"

static_checks() {
    echo "[test] ruff format --check";  ruff format --check -q src tests benchmarks integrations
    echo "[test] ruff check";           ruff check -q src tests benchmarks integrations
    echo "[test] mypy --strict src";    MYPY_CACHE_DIR="$mypy_cache/src" mypy
    echo "[test] mypy --strict integrations/airflow (against Airflow)"; MYPY_CACHE_DIR="$mypy_cache/airflow" scripts/check-airflow-provider.sh
    echo "[test] lint-imports";         lint-imports --no-cache --no-logo  # layer contracts: pyproject.toml
}
checks_log=$(mktemp)
trap 'rm -f "$checks_log"' EXIT
(set -euo pipefail; static_checks) >"$checks_log" 2>&1 &
checks=$!

echo "[test] pytest (the static checks run beside it; their output follows the tests')"
tests=0
pytest "$@" || tests=$?
static=0
wait "$checks" || static=$?
cat "$checks_log"
if [ "$static" -ne 0 ]; then
    echo "[test] FAILED: a static check (above) exited with $static"
fi
if [ "$tests" -ne 0 ]; then
    exit "$tests"
fi
exit "$static"

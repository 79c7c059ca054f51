#!/usr/bin/env bash
# Set up everything Steward needs on a Debian machine, idempotently:
#   - Debian packages: a Java 17 runtime (for Spark and for ZooKeeper, whose jars come with the
#     pyspark package), Chromium for the web UI's browser tests (tests/e2e/ui, driven by
#     playwright), Node and npm for the sign-on tests' OpenID provider (tests/e2e/oidc installs
#     the npm package oidc-provider into ~/.cache/steward-tests itself), and Prometheus and
#     Alertmanager for the alert rules' tests (promtool, and the servers tests/e2e/alerts
#     starts itself: their packages' services need systemd);
#   - a virtual environment in .venv with Steward and its Python dependencies.
# Safe to run again: it installs only what is missing.
#
# --no-compile: leave the installed packages' bytecode to the processes that import them
# (scripts/test.sh, which lets them write it; see the compiling step below).
set -euo pipefail
cd "$(dirname "$0")/.."

compile_packages=1
for arg in "$@"; do
    case "$arg" in
        --no-compile) compile_packages=0 ;;
        *) echo "usage: scripts/setup.sh [--no-compile]" >&2; exit 2 ;;
    esac
done

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

need_packages=()
for pkg in openjdk-17-jre-headless python3-venv iproute2 nftables chromium openssh-server openssh-client \
    prometheus prometheus-alertmanager; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_packages+=("$pkg")
done
# Node and npm by command, not by package: a Node from elsewhere (NodeSource's nodejs bundles
# npm, and conflicts with Debian's npm package) serves as well.
command -v node >/dev/null 2>&1 || need_packages+=(nodejs)
command -v npm >/dev/null 2>&1 || need_packages+=(npm)
if [ ${#need_packages[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    log "installing Debian packages: ${need_packages[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_packages[@]}" >/dev/null
else
    log "Debian packages present (Java 17, Chromium, OpenSSH, Prometheus, Alertmanager, Node)"
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "error: Steward needs Python >= 3.11 ($python is $("$python" --version 2>&1))" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    log "creating virtual environment .venv"
    # Without the bundled pip where this Python has a pip of its own to install uv with: making
    # the venv takes 0.2 s instead of 6.5 (ensurepip unpacks and compiles pip); the venv still
    # gets a pip, from uv below (a TaskManager builds job environments with `python -m pip`).
    if "$python" -m pip --version >/dev/null 2>&1; then
        "$python" -m venv --without-pip .venv
    else
        "$python" -m venv .venv
    fi
fi
stamp=.venv/.steward-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    log "installing Python dependencies into .venv (with uv)"
    # uv resolves and installs the same packages as pip in a fraction of the time (42 s
    # against 2 min 55 s for a fresh .venv here), which a fresh clone's CI run pays every time.
    if .venv/bin/python -m pip --version >/dev/null 2>&1; then
        .venv/bin/python -m pip install -q uv
    else
        "$python" -m pip --python .venv/bin/python install -q uv
    fi
    # From uv's cache alone first: pyspark comes only as a source archive, and the package
    # index here answers every revalidation "modified", so an online install built its 400 MB
    # wheel again each time (27 s of the 42 s) and kept every build (55 of them, 50 GB, in this
    # machine's cache). Offline, the wheel built once is reused and the install takes ~2 s;
    # whatever the cache cannot satisfy (a first run, a new requirement) is resolved online.
    # (The versions are then those the cache knows; `uv cache clean` makes the next install
    # resolve online again. `uv cache prune` removes the builds earlier online installs left.)
    uv_install() {
        .venv/bin/uv pip install -q --offline --python .venv/bin/python "$@" 2>/dev/null ||
            .venv/bin/uv pip install -q --python .venv/bin/python "$@"
    }
    uv_install -e '.[dev]'
    .venv/bin/python -m pip --version >/dev/null 2>&1 || uv_install pip
    touch "$stamp"
else
    log "Python dependencies present in .venv"
fi
# Bytecode for every installed package, written once. uv (unlike pip) installs sources only, and
# where PYTHONDONTWRITEBYTECODE is set no process writes __pycache__, so each of the hundreds of
# processes a test run starts would compile pydantic, FastAPI, kazoo and PySpark again: a
# JobManager's imports cost 3.0 s of CPU instead of 1.5 s that way, a TaskManager's 2.0 instead of
# 0.9 (docs/performance.md, "Start-up cost"). Compiling takes about 30 s once. Left out: packages
# no Steward process or test imports (sympy, networkx and cfn-lint come with moto's server for
# its CloudFormation support; matplotlib only draws benchmarks/run_all.py's plots; mypy runs
# compiled; pip, setuptools), a third of the compiling's CPU. With --no-compile (scripts/test.sh)
# the processes write it themselves, each module once, as they import it: a test run imports
# less than half of what is installed (pandas, most of moto and of PySpark never), so it spends
# less than the compiling would, and not before its first test.
compiled=.venv/.steward-compiled
if [ "$compile_packages" -eq 1 ] && { [ ! -f "$compiled" ] || [ "$stamp" -nt "$compiled" ]; }; then
    log "compiling the installed packages' bytecode"
    .venv/bin/python -m compileall -q -j 0 \
        -x '/site-packages/(sympy|networkx|cfnlint|matplotlib|fontTools|mypy|mypyc|pip|setuptools)/' \
        "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" >/dev/null
    touch "$compiled"
fi

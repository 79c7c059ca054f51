"""The npm package ``oidc-provider``, installed once per lock file for the sign-on tests.

``npm ci`` from the registry installs exactly ``provider/package-lock.json`` under
``~/.cache/steward-tests/oidc-provider-<sha256 of package.json and the lock file>`` (a changed
file is a new folder; ``.complete`` marks a finished install, so one cut short is redone), behind
a file lock (``tests/cached_builds.py``, as the Airflow venv). Node and npm are Debian's
(``nodejs npm``, scripts/setup.sh); without them the tests are skipped with the reason.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cached_builds import built_once

PROVIDER = Path(__file__).resolve().parent / "provider"
SCRIPT = PROVIDER / "provider.mjs"
INSTALL_TIMEOUT = 600.0


def node() -> str | None:
    return shutil.which("node")


def installed_modules() -> Path:
    """The ``node_modules`` folder with oidc-provider, installed if missing."""
    lock_files = (PROVIDER / "package.json").read_bytes() + (
        PROVIDER / "package-lock.json"
    ).read_bytes()
    return built_once("oidc-provider", lock_files, _install) / "node_modules"


def _install(root: Path) -> None:
    root.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PROVIDER / name, root / name)
    npm = shutil.which("npm") or "npm"
    done = subprocess.run(
        [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--cache", str(root / ".npm")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"npm ci of oidc-provider failed:\n{done.stderr[-4000:]}")
    shutil.rmtree(root / ".npm", ignore_errors=True)

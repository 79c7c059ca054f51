"""Zero friction with authentication on (issue 13): ``steward cluster start`` makes the
credentials (mode 0600) and every command in its folder uses them with no option; elsewhere a
token comes from ``$STEWARD_TOKEN``; ``steward token create|list|revoke`` manage them.

The commands run with no ``STEWARD_*`` variable of the test process (as a user's shell would).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from e2e.cluster.cluster_cli import FAST, document, ok, steward
from steward.cluster.workdir import StateDir, load_state

pytestmark = pytest.mark.zookeeper


def test_cluster_start_makes_the_credentials_and_commands_need_no_option(
    workdir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    ok(steward(workdir, *FAST, "cluster", "start", "--jobmanagers", "1", "--taskmanagers", "1"))
    state_dir = StateDir.of(workdir)
    for name in ("admin.token", "internal.token"):
        mode = stat.S_IMODE((state_dir.root / name).stat().st_mode)
        assert mode == 0o600, (name, oct(mode))
    state = load_state(state_dir)
    assert state is not None
    address = state.jobmanager_addresses[0]
    assert httpx.get(f"{address}/v1/jobs", timeout=10).status_code == 401
    assert document(steward(workdir, "list", "--json")) == []  # the admin token, found alone

    created = document(
        steward(workdir, "token", "create", "--name", "dash", "--role", "viewer", "--json")
    )
    viewer = created["token"]
    listed = steward(workdir, "token", "list", "--json")
    assert {t["name"] for t in document(listed)} == {"admin", "dash"}
    assert viewer.split("_", 2)[2] not in listed.stdout

    # Elsewhere: the token from $STEWARD_TOKEN; a viewer reads but may not submit.
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    pipeline = elsewhere / "p.py"
    pipeline.write_text("def main(ctx):\n    return 1\n")
    as_viewer = {"STEWARD_TOKEN": viewer}
    remote = ("-D", f"rest.address={address}")
    assert _run(elsewhere, as_viewer, *remote, "list", "--json").returncode == 0
    refused = _run(elsewhere, as_viewer, *remote, "submit", str(pipeline), "--detach")
    assert refused.returncode == 2
    assert "may not submit" in refused.stderr and "Traceback" not in refused.stderr
    stranger = _run(elsewhere, {}, *remote, "list")
    assert stranger.returncode == 2 and "STEWARD_TOKEN" in stranger.stderr

    ok(steward(workdir, "token", "revoke", created["info"]["id"]))
    revoked = _run(elsewhere, as_viewer, *remote, "list")
    assert revoked.returncode == 2 and "bearer token" in revoked.stderr
    logs = "".join(path.read_text() for path in state_dir.logs.glob("*.log"))
    assert viewer.split("_", 2)[2] not in logs
    assert json.loads(ok(steward(workdir, "cluster", "status", "--json")).stdout)["leader"]


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
    return subprocess.run(
        [sys.executable, "-m", "steward.cli", *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )

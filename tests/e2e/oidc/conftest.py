"""Fixtures of the sign-on tests: one real OpenID provider (oidc-provider under Node) and one
cluster of two JobManagers configured to take it, per module.

The provider's port is chosen first, so the JobManagers start with its issuer; the provider
starts once they have their addresses (its client registers their callbacks). JobManagers
read the provider's discovery document on first need, so the order costs nothing. No
TaskManager: these tests are about who may do what, and a submitted job waits in SCHEDULED.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from e2e.oidc.oidc_provider import CLIENT_ID, CLIENT_SECRET, SCOPE, OidcProvider, new_key
from e2e.oidc.provider_env import node
from e2e.ui.browser import launch
from steward.testing.ports import free_port
from steward.testing.processes import Proc, ProcessCluster
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

if TYPE_CHECKING:
    from playwright.sync_api import Browser

AUDIENCE = "https://steward.test/api"
USERS = {
    "alice": ["data-eng", "everyone"],
    "carol": ["analysts"],
    "bob": ["outsiders"],
}
GROUP_ROLES = "steward-admins=admin, data-eng=submitter, analysts=viewer"
GROUP_TEAMS = "data-eng=etl, data-eng=ml, analysts=bi"
DISPLAY_NAME = "Test IdP"


class SignOnCluster:
    def __init__(self, cluster: ProcessCluster, provider: OidcProvider, standby: Proc) -> None:
        self.cluster = cluster
        self.provider = provider
        self.standby = standby

    @property
    def leader(self) -> Proc:
        leader = self.cluster.leader()
        assert leader is not None
        return leader


@pytest.fixture(scope="module")
def sign_on(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble
) -> Iterator[SignOnCluster]:
    if node() is None:
        pytest.skip("node is missing (Debian's nodejs and npm packages: scripts/setup.sh)")
    workdir = tmp_path_factory.mktemp("oidc")
    secret_file = workdir / "oidc-client.secret"
    secret_file.write_text(CLIENT_SECRET)
    secret_file.chmod(0o600)
    port = free_port()
    cluster = ProcessCluster(
        workdir / "cluster",
        zookeeper.connect_string,
        f"t-oidc-{secrets.token_hex(4)}",
        extra={
            "security.oidc.issuer": f"http://127.0.0.1:{port}",
            "security.oidc.client-id": CLIENT_ID,
            "security.oidc.client-secret-file": str(secret_file),
            "security.oidc.audience": AUDIENCE,
            "security.oidc.user-claim": "preferred_username",
            "security.oidc.group-roles": GROUP_ROLES,
            "security.oidc.group-teams": GROUP_TEAMS,
            "security.oidc.scopes": f"openid profile {SCOPE}",
            "security.oidc.display-name": DISPLAY_NAME,
            "security.oidc.jwks-refresh-floor": "1s",
        },
    )
    (workdir / "cluster").mkdir(exist_ok=True)
    provider: OidcProvider | None = None
    try:
        cluster.start_jobmanager("jm-1")
        cluster.wait_ready(taskmanagers=0)
        standby = cluster.start_jobmanager("jm-2")
        provider = OidcProvider(
            workdir / "provider",
            port,
            audience=AUDIENCE,
            users=USERS,
            redirect_uris=[p.address + "/ui/login/callback" for p in cluster.jobmanagers()],
            keys=[new_key("key-1")],
        )
        provider.start()
        wait_until(lambda: cluster.is_ready(standby), 30, "the standby is ready")
        yield SignOnCluster(cluster, provider, standby)
    finally:
        if provider is not None:
            provider.stop()
        cluster.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launch() as opened:
        yield opened

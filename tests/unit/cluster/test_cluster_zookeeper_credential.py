"""``steward cluster start``'s ZooKeeper credential: made once (0600) and kept, named in the
processes' settings; never made when the user chose their own file or world-open state."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.cluster.local import LocalCluster
from steward.cluster.settings import CLIENT_ACL, DIGEST_FILE, UserSettings, cluster_settings


def _settings(tmp_path: Path, user: UserSettings) -> dict[str, object]:
    local = LocalCluster(tmp_path)
    return cluster_settings(
        user,
        state_root=local.state_dir.root,
        quorum="127.0.0.1:15000",
        cluster_id="local-a",
        slots=None,
        digest_file=local._zookeeper_credential(user),
    )


def test_the_cluster_makes_a_private_credential_once_and_names_it(tmp_path: Path) -> None:
    user = UserSettings({}, environ={})
    settings = _settings(tmp_path, user)
    digest = LocalCluster(tmp_path).state_dir.zookeeper_digest
    assert settings[DIGEST_FILE] == str(digest)
    assert digest.stat().st_mode & 0o777 == 0o600
    first = digest.read_text()
    _settings(tmp_path, user)
    assert digest.read_text() == first  # the state in ZooKeeper is protected by it


@pytest.mark.parametrize(
    ("raw", "environ"),
    [
        ({DIGEST_FILE: "/etc/steward/zookeeper.digest"}, {}),
        ({CLIENT_ACL: "open"}, {}),
        ({}, {"STEWARD_HIGH_AVAILABILITY_ZOOKEEPER_CLIENT_ACL": "open"}),
    ],
)
def test_the_users_choice_wins_and_no_credential_is_made(
    tmp_path: Path, raw: dict[str, object], environ: dict[str, str]
) -> None:
    settings = _settings(tmp_path, UserSettings(raw, environ=environ))
    assert settings.get(DIGEST_FILE) == raw.get(DIGEST_FILE)
    assert not LocalCluster(tmp_path).state_dir.zookeeper_digest.exists()

"""The ZooKeeper credential and ACL choice (steward.ha.acl), without a server: the file's
format and mode, the refusal without a credential, and a password that never shows."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from steward.config import ZooKeeperSettings, load
from steward.errors import ConfigurationError
from steward.ha.acl import (
    ACL_KEY,
    DIGEST_FILE_KEY,
    OPEN,
    AclMode,
    DigestCredential,
    ZooKeeperAccess,
    create_digest_file,
)


def _settings(tmp_path: Path, **keys: str) -> ZooKeeperSettings:
    own = tmp_path / "steward.toml"
    own.write_text("")
    return load(own, keys, environ={}).settings.zookeeper


def test_a_new_credential_file_is_random_private_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "state" / "zookeeper.digest"
    first = create_digest_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first.user == "steward"
    assert len(first.password) >= 40
    assert create_digest_file(path) == first  # the state in ZooKeeper is protected by it
    assert create_digest_file(tmp_path / "other.digest") != first


def test_the_password_never_shows_in_a_repr_or_an_error(tmp_path: Path) -> None:
    credential = create_digest_file(tmp_path / "zookeeper.digest")
    assert credential.password not in repr(credential)
    assert credential.password not in repr(ZooKeeperAccess(AclMode.CREATOR, credential))
    bad = tmp_path / "bad.digest"
    bad.write_text("no-colon-secret-xyz\n")
    with pytest.raises(ConfigurationError) as caught:
        DigestCredential.read(bad)
    assert "secret-xyz" not in str(caught.value)
    assert "user:password" in str(caught.value)
    assert caught.value.key == DIGEST_FILE_KEY


@pytest.mark.parametrize("content", ["", ":password\n", "user:\n", "a:b\nc:d\n"])
def test_a_malformed_credential_file_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "zookeeper.digest"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match="one line user:password"):
        DigestCredential.read(path)


def test_a_password_may_hold_colons(tmp_path: Path) -> None:
    path = tmp_path / "zookeeper.digest"
    path.write_text("ops:pa:ss\n")
    assert DigestCredential.read(path) == DigestCredential("ops", "pa:ss")


def test_a_missing_file_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=f"{DIGEST_FILE_KEY}: .* does not exist"):
        DigestCredential.read(tmp_path / "absent")


def test_a_file_others_may_read_is_used_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "zookeeper.digest"
    path.write_text("ops:secret-abc\n")
    path.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="steward.ha.acl"):
        assert DigestCredential.read(path).user == "ops"
    assert "chmod 600" in caplog.text
    assert "secret-abc" not in caplog.text


def test_a_process_with_creator_acl_and_no_credential_is_refused(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    with pytest.raises(ConfigurationError) as caught:
        ZooKeeperAccess.for_process(settings)
    message = str(caught.value)
    assert ACL_KEY in message
    assert DIGEST_FILE_KEY in message


def test_open_is_allowed_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    settings = _settings(tmp_path, **{ACL_KEY: "open"})
    with caplog.at_level(logging.WARNING, logger="steward.ha.acl"):
        assert ZooKeeperAccess.for_process(settings) == OPEN
    assert "world-open" in caplog.text
    assert OPEN.kazoo_options() == {}


def test_creator_access_authenticates_and_sets_the_acl(tmp_path: Path) -> None:
    credential = create_digest_file(tmp_path / "zookeeper.digest")
    settings = _settings(tmp_path, **{DIGEST_FILE_KEY: str(tmp_path / "zookeeper.digest")})
    access = ZooKeeperAccess.for_process(settings)
    options = access.kazoo_options()
    assert options["auth_data"] == [("digest", f"steward:{credential.password}")]
    [acl] = options["default_acl"]
    assert acl.id.scheme == "digest"
    assert acl.id.id.startswith("steward:")
    assert credential.password not in acl.id.id  # the server keeps only a hash
    assert acl.perms == 31  # all permissions, to this credential alone


def test_a_client_without_a_credential_reads_anonymously(tmp_path: Path) -> None:
    assert ZooKeeperAccess.for_client(_settings(tmp_path)) == OPEN


def test_an_unknown_acl_mode_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="must be creator or open"):
        _settings(tmp_path, **{ACL_KEY: "world"})

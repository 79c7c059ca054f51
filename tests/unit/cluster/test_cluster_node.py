"""A host's share of a cluster over SSH (steward.cluster.node, steward.cluster.remote): the files
it is sent, its record, and how a host that cannot be reached is reported.

The processes it starts, and SSH between hosts, are tested for real in
tests/e2e/cluster/test_ssh_cluster.py.
"""

from __future__ import annotations

import base64
import shutil
import stat
from pathlib import Path

import pytest

from steward.cluster.fleet import Fleet, shared_marker
from steward.cluster.node import Node
from steward.cluster.remote import Remote, RemoteHostError, on_each
from steward.cluster.workdir import StateDir
from steward.errors import LocalClusterError


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_files_sent_are_written_private_under_the_state_folder(tmp_path: Path) -> None:
    node = Node(tmp_path, "10.0.0.7")
    assert node.receive({"steward.toml": _b64(b"a = 1\n"), "tls/server.key": _b64(b"k")})
    root = tmp_path / ".steward"
    assert (root / "steward.toml").read_bytes() == b"a = 1\n"
    assert stat.S_IMODE((root / "tls" / "server.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "steward.toml").stat().st_mode) == 0o600


@pytest.mark.parametrize("path", ["../escape", "/etc/passwd", "tls/../../x", ""])
def test_a_file_outside_the_state_folder_is_refused(tmp_path: Path, path: str) -> None:
    with pytest.raises(LocalClusterError, match=r"outside \.steward/"):
        Node(tmp_path, "h1").receive({path: _b64(b"x")})
    assert not (tmp_path / "escape").exists()


def test_the_shared_storage_is_seen_only_where_the_marker_is(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    with shared_marker(f"file://{storage}") as marker:
        assert marker is not None
        assert Node(tmp_path, "h1").receive({}, shared=str(marker))
    assert not marker.exists()  # removed afterwards
    assert not Node(tmp_path, "h1").receive({}, shared=str(marker))
    with shared_marker("s3://bucket/steward") as none:
        assert none is None  # an object store is shared by nature


@pytest.mark.parametrize("host", ["", "../h", ".hidden", "a/b"])
def test_a_bad_host_name_is_refused(tmp_path: Path, host: str) -> None:
    with pytest.raises(LocalClusterError, match="bad host name"):
        Node(tmp_path, host)


def test_a_host_with_nothing_started_has_nothing_to_show_or_stop(tmp_path: Path) -> None:
    node = Node(tmp_path, "h1")
    assert node.status() == []
    assert node.stop(timeout=1.0) == []


def test_a_corrupt_record_is_an_error_naming_it(tmp_path: Path) -> None:
    record = tmp_path / ".steward" / "hosts" / "h1.json"
    record.parent.mkdir(parents=True)
    record.write_text("{not json")
    with pytest.raises(LocalClusterError, match=r"h1\.json on h1 is not a valid record"):
        Node(tmp_path, "h1").status()


@pytest.mark.skipif(shutil.which("ssh") is None, reason="no ssh client (openssh-client)")
def test_a_host_that_refuses_the_connection_is_named_with_what_ssh_said(tmp_path: Path) -> None:
    # Port 1 on loopback: nothing listens, the connection is refused at once (real ssh).
    remote = Remote(
        ["ssh", "-p", "1", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3"], "python3", tmp_path
    )
    answers, failures = on_each(["127.0.0.1"], lambda host: remote.node(host, "status"))
    assert answers == {}
    assert failures["127.0.0.1"].startswith("127.0.0.1: cannot be reached over SSH (")
    assert "Connection refused" in failures["127.0.0.1"]
    with pytest.raises(RemoteHostError) as caught:
        remote.node("127.0.0.1", "status")
    assert caught.value.host == "127.0.0.1"


def test_an_ssh_client_that_does_not_exist_is_a_clear_error(tmp_path: Path) -> None:
    remote = Remote(["/nonexistent/ssh"], "python3", tmp_path)
    with pytest.raises(RemoteHostError, match="cannot run '/nonexistent/ssh'"):
        remote.node("h1", "status")


def test_the_admin_token_and_the_cas_key_are_never_sent(tmp_path: Path) -> None:
    root = tmp_path / ".steward"
    (root / "tls").mkdir(parents=True)
    for name in ("steward.toml", "internal.token", "zookeeper.digest", "admin.token"):
        (root / name).write_text(name)
    for name in ("ca.pem", "ca-key.pem", "server.pem", "server-key.pem"):
        (root / "tls" / name).write_text(name)
    (root / "cluster.json").write_text("{}")
    fleet = Fleet(Remote(["ssh"], "python3", tmp_path), StateDir.of(tmp_path))
    assert sorted(fleet.files_to_send()) == [
        "internal.token",
        "steward.toml",
        "tls/ca.pem",
        "tls/server-key.pem",
        "tls/server.pem",
        "zookeeper.digest",
    ]

"""``--proxy-user`` (issue 27 part 2): a job's driver runs as another OS user, when granted.

One cluster for the module (a JobManager, a TaskManager running as root, as this machine's
tests do) whose ``security.proxy-users`` grants a test OS user (made with ``useradd`` for the
module, removed after) to the token ``alice``, and an OS user that does not exist to her too.
The cluster's folder is traversable by anyone (0755), so nothing but the TaskManager's own
care keeps its credential files from the proxy user. Skipped, saying why, when not root.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from steward.client import Client
from steward.errors import ApiError, JobNotFoundError
from steward.supervisor.containment import CGROUP_ENV, TOKEN_ENV
from steward.testing.processes import ProcessCluster
from steward.wire.tokens import Role
from steward.zookeeper.managed import ManagedEnsemble

pytestmark = [
    pytest.mark.zookeeper,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("useradd") is None,
        reason="running a driver as another OS user needs root and useradd (not root here)",
    ),
]

# Reports who it runs as, and what of the TaskManager's it can reach (argv: the paths).
WHOAMI = """
import os, stat, tempfile

def _try(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as f:
                f.read(1)
        return "read"
    except PermissionError:
        return "denied"

def _swap_log():
    # The TaskManager writes, serves and archives runner.log by its path, as root.
    try:
        os.unlink("../runner.log")
        return "removed"
    except PermissionError:
        return "denied"

def _scratch():
    # Its temporary files: the attempt's tmp/, its own to write (tempfile, and Spark's JVM).
    scratch = tempfile.gettempdir()
    with tempfile.NamedTemporaryFile() as probe:
        written = os.path.dirname(probe.name) == scratch
    info = os.stat(scratch)
    jvm = os.environ.get("SPARK_SUBMIT_OPTS", "")
    return [scratch, info.st_uid, stat.S_IMODE(info.st_mode), written, jvm]

def main(ctx):
    print("running as uid", os.getuid(), flush=True)
    folder = os.stat(".")
    return {
        "scratch": _scratch(),
        "uid": os.getuid(),
        "gid": os.getgid(),
        "groups": sorted(os.getgroups()),
        "folder_owner": folder.st_uid,
        "folder_mode": stat.S_IMODE(folder.st_mode),
        "tries": {path: _try(path) for path in ctx.args},
        "env": sorted(os.environ),
        "log_swap": _swap_log(),
    }
"""

USES_FILES = """
import os

def main(ctx):
    import helper  # --py-files

    with open("data.txt") as f:  # --files, linked into the working folder
        text = f.read()
    owner = os.stat(os.path.realpath("data.txt")).st_uid
    return {"helper": helper.VALUE, "data": text, "owner": owner}
"""


@dataclass(frozen=True)
class OsUsers:
    user: str
    uid: int
    group_gid: int
    """A supplementary group of ``user``'s."""
    missing: str
    """Granted, but no such user on the host."""


@pytest.fixture(scope="module")
def os_users() -> Iterator[OsUsers]:
    suffix = uuid.uuid4().hex[:6]
    user, group, missing = f"stw-px-{suffix}", f"stw-pxg-{suffix}", f"stw-none-{suffix}"
    subprocess.run(["groupadd", group], check=True)
    try:
        subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "-G", group, user],
            check=True,
        )
        try:
            uid = int(subprocess.check_output(["id", "-u", user]))
            gid = int(subprocess.check_output(["getent", "group", group]).split(b":")[2])
            yield OsUsers(user, uid, gid, missing)
        finally:
            subprocess.run(["userdel", user], check=False)
    finally:
        subprocess.run(["groupdel", group], check=False)


def _shared_python(folder: Path) -> str:
    """A Python any user of the host may run, with this one's packages: the test's own
    interpreter may live where only root reaches (pyenv under /root), and a driver runs the
    TaskManager's interpreter (docs/security.md#proxy-users)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = Path("/usr/bin") / version
    if not system.exists():
        pytest.skip(f"no {system} that a proxy user could run")
    venv = folder / "python"
    subprocess.run([str(system), "-m", "venv", "--without-pip", str(venv)], check=True)
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    lines = [f"import site; site.addsitedir({path!r})" for path in ours]
    (venv / "lib" / version / "site-packages" / "ours.pth").write_text("\n".join(lines) + "\n")
    return str(venv / "bin" / "python")


@dataclass
class Proxied:
    cluster: ProcessCluster
    folder: Path
    tokens: dict[str, str]
    users: OsUsers

    def client(self, name: str) -> Client:
        addresses = [p.address for p in self.cluster.jobmanagers()]
        return Client(
            addresses, timeout=30, config=self.cluster.rest_config(), token=self.tokens[name]
        )


@pytest.fixture(scope="module")
def proxied(zookeeper: ManagedEnsemble, os_users: OsUsers) -> Iterator[Proxied]:
    # Not under pytest's 0700 folders: the proxy user could reach nothing there anyway.
    folder = Path(tempfile.mkdtemp(prefix="steward-proxy-"))
    folder.chmod(0o755)
    (folder / "whoami.py").write_text(WHOAMI)
    grants = f"{os_users.user}=alice,{os_users.missing}=alice"
    cluster = ProcessCluster(
        folder,
        zookeeper.connect_string,
        f"t-proxy-{uuid.uuid4().hex[:8]}",
        extra={"security.proxy-users": grants, "jobmanager.livy.allowed-sources": str(folder)},
    )
    try:
        cluster.start_jobmanager("jm-1")
        # The TaskManager (and so each driver) runs a Python the proxy user may execute.
        argv = cluster.command("taskmanager", "tm-1", {"taskmanager.numberOfTaskSlots": "2"})
        cluster.spawn("taskmanager", "tm-1", [_shared_python(folder), *argv[1:]])
        cluster.wait_ready(taskmanagers=1)
        with cluster.client() as admin:
            tokens = {
                name: admin.create_token(name, Role.SUBMITTER, teams=["data"]).token
                for name in ("alice", "bob")
            }
        yield Proxied(cluster, folder, tokens, os_users)
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _credentials(proxied: Proxied) -> list[str]:
    """The TaskManager's secrets on its host: the cluster's credentials, its own folder."""
    folder = proxied.folder
    found = [folder / "internal.token", folder / "zookeeper.digest", folder / "work" / "tm-1"]
    assert all(path.exists() for path in found)
    return [str(path) for path in found]


def test_the_driver_runs_as_the_proxy_user_in_a_folder_it_owns(proxied: Proxied) -> None:
    with proxied.client("alice") as alice:
        view = alice.submit(
            proxied.folder / "whoami.py", job_id="as-proxy", proxy_user=proxied.users.user
        )
        assert view.proxy_user == proxied.users.user
        done = alice.wait("as-proxy", timeout=90)
    assert done.state.value == "FINISHED", done.error
    seen = done.value
    assert isinstance(seen, dict)
    assert seen["uid"] == proxied.users.uid
    assert seen["folder_owner"] == proxied.users.uid
    assert seen["folder_mode"] == 0o700
    scratch, owner, mode, written, jvm_options = seen["scratch"]
    assert scratch == str(proxied.folder / "work" / "tm-1" / "as-proxy" / "1" / "tmp")
    assert (owner, mode, written) == (proxied.users.uid, 0o700, True)
    assert f"-Djava.io.tmpdir={scratch}" in jvm_options
    assert proxied.users.group_gid in seen["groups"]
    assert 0 not in seen["groups"]  # none of root's groups is kept


def test_the_proxy_user_cannot_read_the_taskmanagers_credentials(proxied: Proxied) -> None:
    paths = _credentials(proxied)
    with proxied.client("alice") as alice:
        alice.submit(
            proxied.folder / "whoami.py",
            job_id="reach",
            args=paths,
            proxy_user=proxied.users.user,
        )
        done = alice.wait("reach", timeout=90)
    assert done.state.value == "FINISHED", done.error
    seen = done.value
    assert isinstance(seen, dict)
    assert seen["tries"] == dict.fromkeys(paths, "denied")
    assert seen["log_swap"] == "denied"  # no symlink to a root-only file in its place
    # The TaskManager has the admin token in its environment (the kit exports it); the
    # driver gets only what a driver needs, and its attempt's markers.
    assert os.environ["STEWARD_TOKEN"]
    steward_env = {name for name in seen["env"] if name.startswith("STEWARD_")}
    assert steward_env <= {"STEWARD_LOG_FORMAT", TOKEN_ENV, CGROUP_ENV}


def test_the_files_a_job_names_reach_its_proxy_user_as_its_own_copies(proxied: Proxied) -> None:
    # The host cache they are fetched into is the TaskManager's alone (0700): without the
    # copies the driver could not read them (and such a job was refused before).
    folder = proxied.folder
    (folder / "uses_files.py").write_text(USES_FILES)
    (folder / "helper.py").write_text("VALUE = 42\n")
    (folder / "data.txt").write_text("the words\n")
    with proxied.client("alice") as alice:
        alice.submit(
            folder / "uses_files.py",
            job_id="with-files",
            py_files=[folder / "helper.py"],
            files=[folder / "data.txt"],
            proxy_user=proxied.users.user,
        )
        done = alice.wait("with-files", timeout=90)
    assert done.state.value == "FINISHED", done.error
    assert done.value == {"helper": 42, "data": "the words\n", "owner": proxied.users.uid}


def test_a_caller_not_granted_the_user_gets_403_and_nothing_is_stored(proxied: Proxied) -> None:
    with proxied.client("bob") as bob, pytest.raises(ApiError) as refused:
        bob.submit(proxied.folder / "whoami.py", job_id="bob-proxy", proxy_user=proxied.users.user)
    assert refused.value.status == 403
    assert "security.proxy-users" in str(refused.value)
    with proxied.cluster.client() as admin, pytest.raises(JobNotFoundError):
        admin.job("bob-proxy")


def test_livy_proxy_user_is_checked_against_the_grants(proxied: Proxied) -> None:
    jm = proxied.cluster.jobmanagers()[0]
    body = {"file": str(proxied.folder / "whoami.py"), "proxyUser": proxied.users.user}

    def post(name: str) -> httpx.Response:
        return httpx.post(
            jm.address + "/batches",
            content=json.dumps(body),
            headers={"authorization": f"Bearer {proxied.tokens[name]}"},
            verify=proxied.cluster.tls.context,
            timeout=30,
        )

    refused = post("bob")
    assert refused.status_code == 403, refused.text
    accepted = post("alice")
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["proxyUser"] == proxied.users.user


def test_an_unknown_os_user_fails_the_job_at_once_without_restarts(proxied: Proxied) -> None:
    restart = {"kind": "fixed-delay", "attempts": 5, "delay": 0.1}
    with proxied.client("alice") as alice:
        alice.submit(
            proxied.folder / "whoami.py",
            job_id="no-such-user",
            proxy_user=proxied.users.missing,
            restart=restart,
        )
        done = alice.wait("no-such-user", timeout=90)
        view = alice.job("no-such-user")
    assert done.state.value == "FAILED"
    assert view.attempt_count == 1
    assert done.error is not None and done.error.permanent
    assert f"no OS user {proxied.users.missing!r}" in done.error.message

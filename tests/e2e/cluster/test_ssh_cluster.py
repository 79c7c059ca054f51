"""``steward cluster start|status|stop`` across hosts, over SSH, with the network failing.

Every host is a network namespace made by the test, with its own address on a bridge that
lives only inside the test's namespaces (tests/e2e/partition/network.py). The JobManagers'
and TaskManagers' hosts each run a real OpenSSH server (Debian's ``openssh-server``) on their
address, which accepts one key made by the test; three more hosts run one ZooKeeper server
each (one ensemble); the operator works from a host of its own and a user submits from
another. What is asserted:

- a workers file naming a host that cannot be reached starts nothing anywhere, and says which;
- ``cluster start`` from the operator's host starts 2 JobManagers and 2 TaskManagers on their
  four hosts, each with its own log and record there; ``cluster status`` shows each with its
  host, alive, and the leader;
- a job submitted from the user's host runs; the leader's host is cut off: the running job
  still finishes, under the other JobManager, a job submitted meanwhile too; ``cluster
  status`` names the cut host as unreachable, not as stopped; healed, every process is back;
- ``cluster stop`` stops every process on every host.

Skipped, with the reason, where namespaces or sshd are not available (not root, no iproute2,
no openssh-server).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from e2e.partition.network import Network, NetworkUnavailableError, Observer
from steward.testing.ports import free_zookeeper_port
from steward.testing.waiting import WaitTimeoutError
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

# A cluster of seven hosts started and stopped over SSH, each step a CLI process: past the
# suite's 300 s when two runs of the suite share the machine (load 17).
pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(600)]

SSHD = "/usr/sbin/sshd"
SESSION_TIMEOUT = "4s"
JM_PORT = 8081
SSH_HOSTS = ("jm1", "jm2", "tm1", "tm2")
ZK_HOSTS = ("zk1", "zk2", "zk3")
# Four processes started over SSH, one after another: the default 60 s ran out at load 15,
# tm-2 (the last one started) registered but not yet in the JobManagers' views.
START_BUDGET = ("--timeout", "180")

PIPELINE = """\
import time
from pathlib import Path

def main(ctx):
    # A number: seconds to sleep. A path: a gate, waited for until the test opens it (the
    # job runs while the leader's host is cut off under it, however loaded the machine).
    arg = ctx.args[0] if ctx.args else "0"
    if arg.startswith("/"):
        while not Path(arg).exists():
            time.sleep(0.1)
        return {"gate": arg}
    time.sleep(float(arg))
    return {"slept": float(arg)}
"""


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"no `{tool}` (apt-get install -y iproute2 openssh-client)"
    if not os.access(SSHD, os.X_OK):
        return f"no {SSHD} (apt-get install -y openssh-server)"
    return None


class Site:
    """The test's hosts: namespaces, their sshd, the ZooKeeper ensemble, and a workdir."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.network = Network()
        self.observer = Observer(self.network)
        self.addresses = {name: self.network.add(name) for name in (*ZK_HOSTS, *SSH_HOSTS)}
        self.addresses["ops"] = self.network.add("ops")
        self.addresses["user"] = self.network.add("user")
        self.addresses["ghost"] = self.network.add("ghost")  # a host with no sshd
        self._sshd: list[subprocess.Popen[bytes]] = []
        self.key = tmp_path / "id_ed25519"
        self.workdir = tmp_path / "cluster"
        self.workdir.mkdir()
        self.ensemble: ManagedEnsemble | None = None

    # ------------------------------------------------------------------ setup

    def start_sshd(self) -> None:
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True
        )
        host_key = self.tmp / "ssh_host_ed25519_key"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)], check=True
        )
        authorized = self.tmp / "authorized_keys"
        shutil.copy(self.key.with_suffix(".pub"), authorized)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for name in SSH_HOSTS:
            config = self.tmp / f"sshd-{name}.conf"
            config.write_text(
                f"ListenAddress {self.addresses[name]}\n"
                f"HostKey {host_key}\n"
                f"PidFile {self.tmp / f'sshd-{name}.pid'}\n"
                f"AuthorizedKeysFile {authorized}\n"
                "PermitRootLogin prohibit-password\n"
                "PasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\n"
                "UsePAM no\n"
                "StrictModes no\n"
                "LogLevel ERROR\n"
            )
            command = [*self.network.exec_prefix(name), SSHD, "-D", "-e", "-f", str(config)]
            log = (self.tmp / f"sshd-{name}.log").open("ab")
            self._sshd.append(subprocess.Popen(command, stdout=log, stderr=log))
        for name in SSH_HOSTS:
            wait_until(
                lambda name=name: self.ssh_works(name), 20, message=f"sshd of {name} answers"
            )

    def ssh_works(self, name: str) -> bool:
        argv = [*self.network.exec_prefix("ops"), "ssh", *self.ssh_options(), self.addresses[name]]
        done = subprocess.run([*argv, "true"], capture_output=True, check=False, timeout=20)
        return done.returncode == 0

    def ssh_options(self) -> list[str]:
        return [
            "-i",
            str(self.key),
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=3",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
        ]

    def start_zookeeper(self) -> str:
        hosts = [self.addresses[name] for name in ZK_HOSTS]
        prefixes = {n: self.network.exec_prefix(name) for n, name in enumerate(ZK_HOSTS, 1)}
        self.ensemble = ManagedEnsemble(
            self.tmp / "zookeeper", command_prefix=lambda server_id: prefixes[server_id]
        )
        ensemble = self.ensemble
        self.observer.run(lambda: ensemble.start(3, free_zookeeper_port(3), host=hosts))
        return ensemble.connect_string

    def hosts_files(self, *, ghost: bool = False) -> tuple[Path, Path]:
        masters = self.tmp / "masters"
        masters.write_text("".join(f"{self.addresses[h]}:{JM_PORT}\n" for h in ("jm1", "jm2")))
        workers = self.tmp / ("workers-ghost" if ghost else "workers")
        names = ("tm1", "tm2", "ghost") if ghost else ("tm1", "tm2")
        workers.write_text("".join(f"{self.addresses[h]}\n" for h in names))
        return masters, workers

    # ------------------------------------------------------------------ commands

    def steward(
        self, host: str, *args: str, cwd: Path | None = None, timeout: float = 180.0
    ) -> subprocess.CompletedProcess[str]:
        """``steward ARGS`` run on ``host``."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
        argv = [*self.network.exec_prefix(host), sys.executable, "-m", "steward.cli", *args]
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
            cwd=cwd or self.workdir,
            env=environ,
        )

    def host_of(self, address: str | None) -> str:
        return next(name for name, a in self.addresses.items() if address and a in address)

    def close(self) -> None:
        for sshd in self._sshd:
            with contextlib.suppress(OSError):
                sshd.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                sshd.wait(timeout=10)
        if self.ensemble is not None:
            with contextlib.suppress(Exception):
                self.ensemble.stop(timeout=10)
        self.observer.close()
        self.network.close()


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    try:
        made = Site(tmp_path)
    except NetworkUnavailableError as exc:
        pytest.skip(str(exc))
    try:
        made.start_sshd()
        yield made
    finally:
        _kill_recorded(made.workdir)
        made.close()


def _kill_recorded(workdir: Path) -> None:
    """Whatever a failed test left running on its hosts (pids are this machine's)."""
    for record in (workdir / ".steward" / "hosts").glob("*.json"):
        with contextlib.suppress(Exception):
            for entry in json.loads(record.read_text())["processes"]:
                process = psutil.Process(entry["pid"])
                if str(workdir) in " ".join(process.cmdline()):
                    process.kill()


def _document(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def test_a_cluster_across_hosts_started_over_ssh_survives_its_leaders_host_cut_off(
    site: Site,
) -> None:
    settings = _settings(site, site.start_zookeeper())

    # A host that cannot be reached: reported by name, nothing started anywhere.
    masters, ghostly = site.hosts_files(ghost=True)
    failed = site.steward(
        "ops", *settings, "cluster", "start", "--masters", str(masters), "--workers", str(ghostly)
    )
    assert failed.returncode == 2, failed.stderr
    assert f"{site.addresses['ghost']}: cannot be reached over SSH" in failed.stderr
    assert "nothing was started" in failed.stderr
    assert not list((site.workdir / ".steward" / "hosts").glob("*.json"))
    assert not list((site.workdir / ".steward" / "logs").glob("*.log"))

    masters, workers = site.hosts_files()
    started = site.steward(
        "ops", *settings, "cluster", "start", "--masters", str(masters),
        "--workers", str(workers), "--json", *START_BUDGET,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    status = _document(started)
    processes = {p["id"]: p for p in status["processes"]}
    assert {p: site.host_of(processes[p]["host"]) for p in processes} == {
        "jm-1": "jm1",
        "jm-2": "jm2",
        "tm-1": "tm1",
        "tm-2": "tm2",
    }
    assert all(p["alive"] for p in processes.values())
    for proc_id, process in processes.items():  # its own log, on its host, written there
        assert Path(process["log"]).is_file(), proc_id
        assert psutil.Process(process["pid"]).is_running()
    leader_id = status["leader"]
    assert leader_id in ("jm-1", "jm-2")
    leader_host = site.host_of(processes[leader_id]["host"])
    other_id = "jm-2" if leader_id == "jm-1" else "jm-1"

    # A user on another host submits; the leader's host is cut off under the running job.
    user = site.tmp / "user"
    user.mkdir()
    (user / "sleepy.py").write_text(PIPELINE)
    gate = site.tmp / "across.gate"
    addresses = ",".join(f"http://{site.addresses[h]}:{JM_PORT}" for h in ("jm1", "jm2"))
    client = [
        "-D",
        f"rest.address={addresses}",
        "-D",
        f"client.token-file={site.workdir / '.steward' / 'admin.token'}",
    ]
    submitted = site.steward(
        "user",
        *client,
        "submit",
        "sleepy.py",
        "--job-id",
        "across",
        "--detach",
        "--",
        str(gate),
        cwd=user,
    )
    assert submitted.returncode == 0, submitted.stderr
    # Polled with a CLI process a time (1 to 3 s each under load, 15 s under two runs at
    # once): the job runs until the gate opens, so it is seen RUNNING whatever the load (a
    # job of a fixed 15 s was seen only FINISHED by a run beside another).
    states: list[str | None] = []

    def runs() -> bool:
        states.append(_job_state(site, client, user, "across"))
        return states[-1] == "RUNNING"

    try:
        wait_until(runs, 60, message="job runs")
    except WaitTimeoutError:
        raise AssertionError(f"job 'across' never seen RUNNING; its states: {states}") from None
    site.network.cut(leader_host)

    during = site.steward(
        "user",
        *client,
        "submit",
        "sleepy.py",
        "--job-id",
        "meanwhile",
        "--json",
        "--",
        "0",
        cwd=user,
    )
    assert during.returncode == 0, during.stderr
    assert _document(during)["state"] == "FINISHED"
    gate.touch()
    assert _job_state(site, client, user, "across", follow=True) == "FINISHED"

    cut = site.steward("ops", "cluster", "status", "--json")
    assert cut.returncode == 1  # not healthy: a host did not answer
    seen = _document(cut)
    assert seen["leader"] == other_id
    by_id = {p["id"]: p for p in seen["processes"]}
    assert by_id[leader_id]["unreachable"] is True
    assert [p for p in by_id if by_id[p]["unreachable"]] == [leader_id]

    site.network.heal(leader_host)

    def healed() -> dict[str, Any] | None:
        done = site.steward("ops", "cluster", "status", "--json")
        return _document(done) if done.returncode == 0 else None

    back = wait_until(healed, 60, message="every process answers again")
    assert back["leader"] == other_id
    assert all(p["alive"] and not p["unreachable"] for p in back["processes"])

    stopped = site.steward("ops", "cluster", "stop", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert sorted(_document(stopped)["stopped"]) == ["jm-1", "jm-2", "tm-1", "tm-2"]
    for process in processes.values():
        assert (
            not psutil.pid_exists(process["pid"])
            or psutil.Process(process["pid"]).status() == psutil.STATUS_ZOMBIE
        )


@pytest.mark.slow  # ~30 s; what is sent (never the CA's key) is a unit test: test_cluster_node.py
def test_a_cluster_across_hosts_with_tls_serves_https_on_every_jobmanager_host(
    site: Site,
) -> None:
    """``--tls`` across hosts: the certificate names every JobManager's host, the key and the
    CA reach them over SSH, and a user on another host who has the CA submits over HTTPS."""
    settings = _settings(site, site.start_zookeeper())
    masters, workers = site.hosts_files()
    started = site.steward(
        "ops", *settings, "cluster", "start", "--tls", "--masters", str(masters),
        "--workers", str(workers), "--json", *START_BUDGET,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    status = _document(started)
    addresses = sorted(p["address"] for p in status["processes"] if p["role"] == "jobmanager")
    assert addresses == sorted(f"https://{site.addresses[h]}:{JM_PORT}" for h in ("jm1", "jm2"))
    assert all(p["alive"] for p in status["processes"])
    # The key went to the JobManagers' hosts private (their processes read it there).
    key = site.workdir / ".steward" / "tls" / "server-key.pem"
    assert key.is_file() and key.stat().st_mode & 0o077 == 0

    user = site.tmp / "user-tls"
    user.mkdir()
    (user / "sleepy.py").write_text(PIPELINE)
    client = [
        "-D",
        f"rest.address={','.join(addresses)}",
        "-D",
        f"rest.ssl.ca={site.workdir / '.steward' / 'tls' / 'ca.pem'}",
        "-D",
        f"client.token-file={site.workdir / '.steward' / 'admin.token'}",
    ]
    done = site.steward("user", *client, "submit", "sleepy.py", "--json", "--", "0", cwd=user)
    assert done.returncode == 0, done.stderr
    assert _document(done)["state"] == "FINISHED"
    # Without the CA the same user cannot talk to it: verification is never off.
    refused = site.steward("user", *client[:2], *client[4:], "list", cwd=user)
    assert refused.returncode != 0
    assert "certificate" in refused.stderr.lower()

    stopped = site.steward("ops", "cluster", "stop", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert sorted(_document(stopped)["stopped"]) == ["jm-1", "jm-2", "tm-1", "tm-2"]


def _settings(site: Site, quorum: str) -> list[str]:
    return [
        "-D",
        f"high-availability.zookeeper.quorum={quorum}",
        "-D",
        f"high-availability.zookeeper.session-timeout={SESSION_TIMEOUT}",
        "-D",
        f"cluster.ssh.options={' '.join(site.ssh_options())}",
    ]


def _job_state(
    site: Site, client: list[str], cwd: Path, job_id: str, *, follow: bool = False
) -> str | None:
    args = ["status", job_id, *(["--follow"] if follow else [])]
    done = site.steward("user", *client, *args, "--json", cwd=cwd, timeout=120)
    if not done.stdout.strip():
        return None
    return str(json.loads(done.stdout).get("state"))

"""The managed ZooKeeper against real JVMs: start, status, stop, ports, fault injection, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from kazoo.client import KazooClient

from steward.errors import EnvironmentMissingError, ManagedZooKeeperError, PortInUseError
from steward.zookeeper.fourletter import ServerMode, four_letter_word, serving_mode
from steward.zookeeper.install import ZOOKEEPER_HINT, locate_install, pyspark_classpath
from steward.zookeeper.managed import ManagedEnsemble, ServerStatus
from support import ZK_TEST_ROOT, free_zookeeper_port, squat, wait_until

pytestmark = pytest.mark.zookeeper

STEWARD = str(Path(sys.executable).parent / "steward")

MakeEnsemble = Callable[..., ManagedEnsemble]


@pytest.fixture
def make_ensemble(tmp_path: Path) -> Iterator[MakeEnsemble]:
    """Start standalone ensembles of this test alone; all are stopped afterwards."""
    ensembles: list[ManagedEnsemble] = []

    def make(name: str = "zk") -> ManagedEnsemble:
        ensemble = ManagedEnsemble(tmp_path / name)
        ensembles.append(ensemble)
        ensemble.start(1, free_zookeeper_port())
        return ensemble

    yield make
    for ensemble in ensembles:
        ensemble.stop()


def java_processes_under(directory: Path) -> list[psutil.Process]:
    """ZooKeeper JVMs whose command line names a file under ``directory``."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if any(arg.startswith(str(directory)) for arg in cmdline):
            found.append(process)
    return found


def round_trip(hosts: str, path: str) -> bytes:
    """Create a node through ``hosts`` and read it back: the server really serves."""
    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=10.0)
    try:
        client.create(path, b"hello", makepath=True, ephemeral=True)
        data, _ = client.get(path)
        return bytes(data)
    finally:
        client.stop()
        client.close()


def gone(pid: int) -> bool:
    """No such process, or only a zombie waiting for a parent that is not ours to reap it."""
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def modes(ensemble: ManagedEnsemble) -> list[str]:
    """The sorted modes of the servers ("None" for one that does not serve)."""
    return sorted(str(s.mode) for s in ensemble.status())


def a_follower(ensemble: ManagedEnsemble) -> ServerStatus:
    return next(s for s in ensemble.status() if s.mode is ServerMode.FOLLOWER)


# -- start, status, stop ----------------------------------------------------------------------


def test_standalone_server_serves_until_stopped_and_leaves_no_process(
    tmp_path: Path, cluster_id: str
) -> None:
    ensemble = ManagedEnsemble(tmp_path / "zk")
    port = free_zookeeper_port()
    try:
        (started,) = ensemble.start(1, port)
        assert started.mode is ServerMode.STANDALONE
        assert ensemble.connect_string == f"127.0.0.1:{port}"
        assert round_trip(ensemble.connect_string, f"{ZK_TEST_ROOT}/{cluster_id}/n") == b"hello"
    finally:
        ensemble.stop()

    assert started.pid is not None
    assert gone(started.pid)
    assert ensemble.status() == [ServerStatus(1, port, None, False, False, None)]
    assert not ensemble.is_running()
    ensemble.stop()  # idempotent


def test_start_of_a_running_ensemble_returns_its_state(make_ensemble: MakeEnsemble) -> None:
    ensemble = make_ensemble()
    (before,) = ensemble.status()

    (again,) = ensemble.start(1, before.client_port)

    assert again.pid == before.pid
    assert again.mode is ServerMode.STANDALONE


def test_ensemble_of_three_has_one_leader_and_two_followers(zk3: ManagedEnsemble) -> None:
    assert modes(zk3) == ["follower", "follower", "leader"]
    assert zk3.connect_string == ",".join(f"127.0.0.1:{p}" for p in zk3.client_ports.values())


def test_taken_port_raises_port_in_use_and_starts_nothing(tmp_path: Path) -> None:
    # The election port of server 3: the last port the plan needs.
    with squat(lambda: free_zookeeper_port(servers=3) + 202) as squatter:
        taken = squatter.getsockname()[1]
        base = taken - 202
        ensemble = ManagedEnsemble(tmp_path / "zk")
        squatter.listen()
        with pytest.raises(PortInUseError, match=f"{taken} \\(election port of server 3\\)"):
            ensemble.start(3, base)

    assert java_processes_under(tmp_path) == []
    assert ensemble.status() == []


def test_stop_leaves_another_ensemble_running(make_ensemble: MakeEnsemble) -> None:
    mine, other = make_ensemble("mine"), make_ensemble("other")

    mine.stop()

    (status,) = other.status()
    assert status.mode is ServerMode.STANDALONE
    assert mine.status()[0].running is False


@pytest.mark.parametrize(
    ("same_start_time", "same_config"),
    [(True, False), (False, True)],
    ids=["same-start-time-other-zoo-cfg", "same-zoo-cfg-other-start-time"],
)
def test_stop_never_kills_a_process_that_only_shares_the_recorded_pid(
    make_ensemble: MakeEnsemble, same_start_time: bool, same_config: bool
) -> None:
    mine, other = make_ensemble("mine"), make_ensemble("other")
    mine.stop()
    victim = psutil.Process(other.status()[0].pid)
    # Given mine's state file records the other server's pid, as after a pid reuse, but
    # the start time or the zoo.cfg does not match.
    state_file = mine.data_dir / "ensemble.json"
    state = json.loads(state_file.read_text())
    state["servers"][0].update(
        pid=victim.pid,
        create_time=victim.create_time() if same_start_time else 1.0,
        config=str((other if same_config else mine).data_dir / "server-1" / "zoo.cfg"),
    )
    state_file.write_text(json.dumps(state))

    mine.stop()

    assert victim.is_running()
    assert other.status()[0].mode is ServerMode.STANDALONE


def test_server_that_exits_during_start_is_reported_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "broken-zookeeper"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "zookeeper-3.8.0.jar").write_bytes(b"")  # not a jar: the JVM exits
    monkeypatch.setenv("ZOOKEEPER_HOME", str(home))
    monkeypatch.setenv("SERVER_JVMFLAGS", "-Xshare:off")  # no class archive's training first
    ensemble = ManagedEnsemble(tmp_path / "zk")

    with pytest.raises(ManagedZooKeeperError, match="server 1 is not running") as raised:
        ensemble.start(1, free_zookeeper_port())

    assert "Could not find or load main class" in str(raised.value)  # from its log
    assert [s.running for s in ensemble.status()] == [False]


def test_start_that_times_out_stops_what_it_started(tmp_path: Path) -> None:
    ensemble = ManagedEnsemble(tmp_path / "zk")

    with pytest.raises(ManagedZooKeeperError, match="did not serve within"):
        ensemble.start(3, free_zookeeper_port(servers=3), timeout=0.01)

    assert java_processes_under(tmp_path) == []
    assert [s.pid for s in ensemble.status()] == [None, None, None]


# -- fault injection --------------------------------------------------------------------------


def test_stopped_follower_restarts_and_rejoins(zk3: ManagedEnsemble) -> None:
    follower = a_follower(zk3)

    zk3.stop_server(follower.server_id)
    stopped = zk3.status()[follower.server_id - 1]
    assert (stopped.running, stopped.pid) == (False, None)
    assert follower.pid is not None and gone(follower.pid)

    zk3.start_server(follower.server_id)
    wait_until(lambda: modes(zk3) == ["follower", "follower", "leader"], 30, message="rejoin")


def test_killed_server_restarts_at_once_while_a_client_retries(
    make_ensemble: MakeEnsemble,
) -> None:
    # Regression: the JVM's main thread turns zombie before its other threads close the
    # listening socket; stop_server must return only once the port is really released.
    ensemble = make_ensemble()
    client = KazooClient(hosts=ensemble.connect_string, timeout=4.0)
    client.start(timeout=10.0)
    try:
        for _ in range(3):
            ensemble.stop_server(1)
            ensemble.start_server(1)
        assert ensemble.status()[0].mode is ServerMode.STANDALONE
    finally:
        client.stop()
        client.close()


def test_killing_the_leader_elects_another(zk3: ManagedEnsemble) -> None:
    leader = next(s for s in zk3.status() if s.mode is ServerMode.LEADER)

    zk3.stop_server(leader.server_id)

    def new_leader() -> int | None:
        leaders = [s.server_id for s in zk3.status() if s.mode is ServerMode.LEADER]
        return leaders[0] if leaders else None

    assert wait_until(new_leader, 30, message="new leader") != leader.server_id


def test_frozen_server_stops_answering_and_answers_again_when_thawed(zk3: ManagedEnsemble) -> None:
    follower = a_follower(zk3)
    port = follower.client_port

    zk3.freeze_server(follower.server_id)
    wait_until(lambda: serving_mode(port, timeout=0.3) is None, 10, message="frozen is mute")
    assert zk3.status()[follower.server_id - 1].frozen

    zk3.thaw_server(follower.server_id)
    wait_until(lambda: serving_mode(port, timeout=0.3) is not None, 30, message="thawed answers")


def test_server_for_client_names_the_server_a_client_is_connected_to(
    zk3: ManagedEnsemble,
) -> None:
    server_id, port = 2, zk3.client_ports[2]
    client = KazooClient(hosts=f"127.0.0.1:{port}", timeout=10.0)
    client.start(timeout=10.0)
    try:
        local = client._connection._socket.getsockname()
        peer_port = client._connection._socket.getpeername()[1]
        assert zk3.server_for_port(peer_port) == server_id
        assert zk3.server_for_client(local) == server_id
    finally:
        client.stop()
        client.close()


# -- environment ------------------------------------------------------------------------------


def test_missing_java_is_one_line_naming_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("JAVA_HOME", str(empty))

    with pytest.raises(EnvironmentMissingError) as raised:
        ManagedEnsemble(tmp_path / "zk").start(1, free_zookeeper_port())

    assert "apt-get install -y openjdk-17-jre-headless" in str(raised.value)
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "zk" / "ensemble.json").exists()


def test_zookeeper_home_without_zookeeper_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))

    with pytest.raises(EnvironmentMissingError, match="ZOOKEEPER_HOME") as raised:
        ManagedEnsemble(tmp_path / "zk").start(1, free_zookeeper_port())

    assert ZOOKEEPER_HINT in str(raised.value)


def test_zookeeper_home_distribution_layout_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An Apache-style tree (lib/zookeeper-<version>.jar ...) made of pyspark's jars.
    jars = pyspark_classpath()
    assert jars is not None
    home = tmp_path / "apache-zookeeper"
    (home / "lib").mkdir(parents=True)
    for jar in map(Path, jars):
        (home / "lib" / jar.name).symlink_to(jar)
    server_jar = next(home / "lib" / Path(j).name for j in jars if "/zookeeper-3" in j)
    monkeypatch.setenv("ZOOKEEPER_HOME", str(home))
    # A classpath of this test's own: no class archive recorded for it in the user's cache
    monkeypatch.setenv("SERVER_JVMFLAGS", "-Xshare:off")
    ensemble = ManagedEnsemble(tmp_path / "zk")
    try:
        (status,) = ensemble.start(1, free_zookeeper_port())
        assert status.mode is ServerMode.STANDALONE
        assert status.pid is not None
        assert str(server_jar) in " ".join(psutil.Process(status.pid).cmdline())
    finally:
        ensemble.stop()


def test_by_default_the_server_is_pysparks_current_zookeeper(tmp_path: Path) -> None:
    # No ZOOKEEPER_HOME: the jars of the pyspark Steward depends on, not Debian's 3.8.0
    ensemble = ManagedEnsemble(tmp_path / "zk")
    try:
        (status,) = ensemble.start(1, free_zookeeper_port())
        assert status.pid is not None
        command = " ".join(psutil.Process(status.pid).cmdline())
        assert "/pyspark/jars/zookeeper-3." in command
        assert "/usr/share/java" not in command
        version = four_letter_word(status.client_port, "srvr", timeout=5).splitlines()[0]
        major, minor, patch = (int(x) for x in version.split()[2].split("-")[0].split("."))
        assert (major, minor, patch) >= (3, 8, 4), version  # past 3.8.0's data-loss bugs
        # And its log is in zookeeper.log, through the shipped Log4j 2 configuration
        log = (tmp_path / "zk" / "server-1" / "zookeeper.log").read_text()
        assert "INFO" in log and "binding to port" in log.lower()
    finally:
        ensemble.stop()


def test_server_jvmflags_reach_the_server_jvm_as_with_zkserver_sh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVER_JVMFLAGS", "-Dsteward.test.marker='a b' -XX:TieredStopAtLevel=1")
    ensemble = ManagedEnsemble(tmp_path / "zk")
    try:
        (status,) = ensemble.start(1, free_zookeeper_port())
        assert status.pid is not None
        command = psutil.Process(status.pid).cmdline()
        assert "-Dsteward.test.marker=a b" in command
        assert "-XX:TieredStopAtLevel=1" in command
    finally:
        ensemble.stop()


def test_the_first_start_records_a_class_archive_that_the_jvm_maps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    ensemble = ManagedEnsemble(tmp_path / "zk")
    try:
        (status,) = ensemble.start(1, free_zookeeper_port())
        (archive,) = (cache / "steward" / "zookeeper-classes").glob("*.jsa")
        assert status.pid is not None
        assert f"-XX:SharedArchiveFile={archive}" in psutil.Process(status.pid).cmdline()
    finally:
        ensemble.stop()
    # And the archive fits this classpath: with -Xshare:on the JVM refuses one that does not,
    # and ZooKeeper's classes load from it rather than from the jars
    install = locate_install()
    mapped = ["-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-Xlog:class+load=info"]
    classpath = ["-cp", os.pathsep.join(install.classpath)]
    version = subprocess.run(
        [str(install.java), *mapped, *classpath, "org.apache.zookeeper.Version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert version.returncode == 0, version.stdout + version.stderr
    assert "org.apache.zookeeper.Version source: shared objects file (top)" in version.stdout


# -- CLI --------------------------------------------------------------------------------------


def steward(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STEWARD, "zookeeper", *args], capture_output=True, text=True, timeout=90, check=False
    )


def test_cli_starts_reports_and_stops(tmp_path: Path) -> None:
    data_dir, port = str(tmp_path / "zk"), free_zookeeper_port()
    try:
        started = steward("start", "--port", str(port), "--data-dir", data_dir)
        assert started.returncode == 0, started.stderr
        assert started.stdout.splitlines()[0] == f"127.0.0.1:{port}"

        serving = steward("status", "--json", "--data-dir", data_dir)
        assert serving.returncode == 0
        status = json.loads(serving.stdout)
        assert status["serving"] is True
        assert status["leader"] == 1
        assert status["servers"][0]["mode"] == "standalone"
        pid = status["servers"][0]["pid"]

        stopped = steward("stop", "--data-dir", data_dir)
        assert (stopped.returncode, stopped.stdout.strip()) == (0, "stopped")
        assert gone(pid)
        stopped_status = steward("status", "--json", "--data-dir", data_dir)
        assert stopped_status.returncode == 1, "status must fail when nothing serves"
        after = json.loads(stopped_status.stdout)
        assert after["servers"][0]["running"] is False
    finally:
        ManagedEnsemble(data_dir).stop()


def test_cli_reports_a_taken_port_as_one_error_line(tmp_path: Path) -> None:
    with squat(free_zookeeper_port) as squatter:
        port = squatter.getsockname()[1]
        squatter.listen()
        result = steward("start", "--port", str(port), "--data-dir", str(tmp_path / "zk"))

    assert result.returncode == 2
    assert result.stderr.startswith(f"error: port in use: {port} (client port of server 1)")
    assert len(result.stderr.strip().splitlines()) == 1

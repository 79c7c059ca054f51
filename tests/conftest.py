"""Fixtures shared by every Steward test, one section per subsystem.

ZooKeeper: tests that need it are marked ``@pytest.mark.zookeeper`` and use

- ``zk_quorum``: connect string of a standalone server shared by the whole session;
- ``zk_quorum3`` / ``zk3``: a 3-server ensemble shared by the session; ``zk3`` is the
  ``ManagedEnsemble`` itself for fault injection (stop/freeze servers), and it is healed
  (servers restarted, thawed, all serving) after each test;
- ``cluster_id``: a fresh id per test; use the ZooKeeper namespace
  ``/steward-tests/<cluster_id>`` (``steward.testing.processes.TEST_ROOT``) so tests never see each
  other's nodes.

Containment: ``containment_mode`` runs a test twice, with the attempts' cgroup ("cgroup",
skipped where cgroup v2 cannot be used) and with the process-group fallback ("fallback").

Without Java or ZooKeeper these fixtures fail (EnvironmentMissingError names the apt-get
command); they never skip, so CI cannot pass by not testing.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

import cpu_recorder
import module_order
from steward.supervisor import containment
from steward.testing.zookeeper import heal_ensemble, running_ensemble
from steward.zookeeper.managed import ManagedEnsemble

# No per-example deadline for Hypothesis: its default (200 ms) is a timing assertion, and on a
# loaded 2-core machine the first example also builds its pydantic models (built on first use):
# a test of behaviour must not fail on time. Speed is the benchmarks' business.
settings.register_profile("steward", deadline=None)
settings.load_profile("steward")

# Every Spark driver the tests start reads this host's defaults (a test may still set its own
# SPARK_CONF_DIR): see tests/spark-conf/spark-defaults.conf for what and why.
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).with_name("spark-conf")))
# And every managed ZooKeeper server (read like zkServer.sh reads it): C1 alone starts a server
# for 1.2-1.7 CPU-s instead of 2.2, and a test run starts hundreds.
os.environ.setdefault("SERVER_JVMFLAGS", "-XX:TieredStopAtLevel=1")
# And the standalone clusters' master and worker daemons, for the same reason.
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        action="store_true",
        help="write each module's time into tests/durations.json (the order modules run in)",
    )
    parser.addoption(
        "--record-cpu",
        metavar="PATH",
        help="write each module's CPU seconds (its worker's and the processes it reaped) to PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(module_order.DurationRecorder(), "record-durations")
    cpu_recorder.register(config, config.getoption("--record-cpu"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items[:] = module_order.longest_first(items, module_order.known_durations())


# ---------------------------------------------------------------------------------------------
# ZooKeeper
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedEnsemble]:
    """A standalone ZooKeeper for the whole session; do not stop or freeze it in a test."""
    with running_ensemble(tmp_path_factory.mktemp("zookeeper"), servers=1) as ensemble:
        yield ensemble


@pytest.fixture
def zk_quorum(zookeeper: ManagedEnsemble) -> str:
    """Connect string of the session's standalone ZooKeeper."""
    return zookeeper.connect_string


@pytest.fixture(scope="session")
def zookeeper3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ManagedEnsemble]:
    """A 3-server ensemble, started the first time a test asks for it. Use ``zk3``."""
    with running_ensemble(tmp_path_factory.mktemp("zookeeper3"), servers=3) as ensemble:
        yield ensemble


@pytest.fixture
def zk3(zookeeper3: ManagedEnsemble) -> Iterator[ManagedEnsemble]:
    """The session's 3-server ensemble, all serving; healed after the test whatever it did."""
    heal_ensemble(zookeeper3)  # a no-op unless an earlier heal failed
    yield zookeeper3
    heal_ensemble(zookeeper3)


@pytest.fixture
def zk_quorum3(zk3: ManagedEnsemble) -> str:
    """Connect string of the session's 3-server ensemble."""
    return zk3.connect_string


@pytest.fixture
def cluster_id(request: pytest.FixtureRequest) -> str:
    """A cluster id of this test alone, e.g. ``t-test-failover-3f9a0c1d``."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    return f"t-{slug}-{secrets.token_hex(4)}"


# ---------------------------------------------------------------------------------------------
# Containment
# ---------------------------------------------------------------------------------------------


@pytest.fixture(params=["cgroup", "fallback"])
def containment_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "fallback":
        monkeypatch.setattr(containment, "attempt_parent", lambda: None)
    elif containment.attempt_parent() is None:
        pytest.skip("no usable cgroup v2 on this host")
    return str(request.param)

"""Where a client finds the JobManagers' REST addresses.

In this order, the first that gives any:

1. ``rest.address`` (comma-separated URLs), when configured;
2. the local cluster's ``<workdir>/.steward/cluster.json`` (``steward cluster start``); if
   none of its JobManagers runs, that is said at once instead of retrying dead addresses;
3. ZooKeeper: ``leader/info`` and the contenders' latch nodes under the configured
   ``<root>/<cluster-id>`` (a short-lived, read-only session, connected within at most
   :data:`ZOOKEEPER_LOOKUP_TIMEOUT`: a client should not hang on a wrong quorum), with the
   cluster's ZooKeeper credential when ``high-availability.zookeeper.digest-file`` is set (a
   protected cluster without it is a clear error naming that key and ``rest.address``).

Any JobManager answers REST, so every address is useful, the leader's merely first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from steward.cluster.launcher import live_process
from steward.cluster.workdir import ClusterState, Role, StateDir, load_state
from steward.config import Configuration
from steward.errors import (
    ClusterUnreachableError,
    ConfigurationError,
    CoordinationError,
    StewardError,
)

log = logging.getLogger(__name__)

ZOOKEEPER_LOOKUP_TIMEOUT = 5.0


def discover_addresses(
    config: Configuration, workdir: Path, *, zookeeper_timeout: float | None = None
) -> list[str]:
    """The REST base URLs of the cluster ``config`` names, or :class:`ClusterUnreachableError`.

    ``zookeeper_timeout`` bounds the ZooKeeper connection (default: the configured
    connection timeout, at most :data:`ZOOKEEPER_LOOKUP_TIMEOUT`).
    """
    configured = config.settings.client.rest_address.strip()
    if configured:
        return parse_addresses(configured)
    state_dir = StateDir.of(workdir)
    state = load_state(state_dir)
    if state is not None and state.jobmanager_addresses:
        return _from_local_cluster(state_dir, state)
    if zookeeper_timeout is None:
        zookeeper_timeout = min(
            config.settings.zookeeper.connection_timeout, ZOOKEEPER_LOOKUP_TIMEOUT
        )
    return _from_zookeeper(config, zookeeper_timeout)


def parse_addresses(text: str) -> list[str]:
    """``rest.address``: comma-separated URLs (``http://`` is assumed when no scheme is given)."""
    addresses = [normalize_address(part) for part in text.split(",") if part.strip()]
    if not addresses:
        raise ConfigurationError("rest.address lists no address", key="rest.address")
    return addresses


def normalize_address(address: str) -> str:
    """``host:port`` or a URL -> ``http(s)://host:port`` without a trailing slash."""
    text = address.strip().rstrip("/")
    if "://" not in text:
        text = f"http://{text}"
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ConfigurationError(f"{address!r} is not a JobManager URL: {exc}") from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            f"{address!r} is not a JobManager URL (expected e.g. http://127.0.0.1:8081)"
        )
    return text


def _from_local_cluster(state_dir: StateDir, state: ClusterState) -> list[str]:
    jobmanagers = state.of_role(Role.JOBMANAGER)
    if not any(live_process(entry) for entry in jobmanagers):
        raise ClusterUnreachableError(
            f"the local cluster in {state_dir.root} is not running (none of its JobManagers"
            " is alive); start it with `steward cluster start`"
        )
    return [normalize_address(address) for address in state.jobmanager_addresses]


def _from_zookeeper(config: Configuration, timeout: float) -> list[str]:
    # Imported here: most commands find their cluster without ZooKeeper (rest.address, a
    # local cluster's state), and kazoo costs each of them ~0.03 s of CPU.
    from steward.ha.acl import ZooKeeperAccess
    from steward.ha.directory import read_directory

    zookeeper = config.settings.zookeeper
    quorum, root = zookeeper.quorum, zookeeper.cluster_root
    try:
        access = ZooKeeperAccess.for_client(zookeeper)
        directory = read_directory(quorum, root, timeout=timeout, access=access)
    except CoordinationError as exc:
        raise ClusterUnreachableError(
            f"cannot find a JobManager: {exc}. Set rest.address, run the command where"
            " `steward cluster start` ran, or start ZooKeeper"
        ) from exc
    if not directory.addresses:
        raise ClusterUnreachableError(
            f"no JobManager is registered in ZooKeeper at {quorum} under {root}:"
            " is the cluster running (and is high-availability.cluster-id right)?"
        )
    log.debug("found jobmanagers addresses=%s", directory.addresses)
    return [normalize_address(address) for address in directory.addresses]


def local_cluster_only(urls: Sequence[str], workdir: Path) -> bool:
    """Every address is a JobManager of the local cluster of ``workdir`` (whose admin token
    the client may then send)."""
    try:
        state = load_state(StateDir.of(workdir))
    except StewardError:
        return False
    if state is None:
        return False
    local = {normalize_address(address) for address in state.jobmanager_addresses}
    return bool(urls) and set(urls) <= local


def rediscovery(config: Configuration, workdir: Path) -> Callable[[float], list[str]]:
    """How a client finds the JobManagers again when none of its addresses answers (a new
    leader elsewhere): the same discovery, with ZooKeeper asked within the given timeout."""

    def rediscover(timeout: float) -> list[str]:
        return discover_addresses(config, workdir, zookeeper_timeout=timeout)

    return rediscover

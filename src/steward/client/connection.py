"""How a :class:`steward.Client` reaches its cluster: the JobManagers' addresses, TLS, a token.

Addresses given are used as they are; none given, they are found (:mod:`.discovery`) and found
again when every one fails. An ``https://`` JobManager is verified with ``rest.ssl.ca`` of the
configuration (loaded when not given: a local cluster's own CA in its folder), else the
system's CAs (one context per process for the same settings: :mod:`.tls_contexts`). The
token is the one given, else the one :func:`steward.security.credentials.find_token` finds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import httpx

from steward.client.discovery import (
    discover_addresses,
    local_cluster_only,
    normalize_address,
    rediscovery,
)
from steward.client.failover import Backoff, Failover, RequestTimeouts
from steward.client.tls_contexts import shared_client_tls
from steward.config import Configuration, load
from steward.security.credentials import find_token


def failover(
    addresses: Sequence[str] | None,
    *,
    config: Configuration | None,
    workdir: Path,
    timeout: float,
    transport: httpx.BaseTransport | None,
    backoff: Backoff,
    request_timeouts: RequestTimeouts,
    token: str | None,
) -> Failover:
    """The :class:`Failover` a client sends every request through."""
    rediscover = None
    if addresses is None:
        config = config if config is not None else load()
        addresses = discover_addresses(config, workdir)
        rediscover = rediscovery(config, workdir)
    urls = [normalize_address(address) for address in addresses]
    if config is None and any(url.startswith("https://") for url in urls):
        config = load()  # rest.ssl.ca: of ./steward.toml, or of the local cluster here
    return Failover(
        urls,
        timeout=timeout,
        transport=transport,
        backoff=backoff,
        request_timeouts=request_timeouts,
        rediscover=rediscover,
        tls=shared_client_tls(config.settings.tls if config is not None else None),
        token=find_token(
            token,
            token_file=config.settings.client.token_file if config is not None else "",
            workdir=workdir,
            local_cluster=local_cluster_only(urls, workdir),
        ),
    )

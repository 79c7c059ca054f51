"""``StewardHook``: a ``steward`` connection turned into calls to the cluster.

The connection: ``host`` holds the JobManager URL(s), comma-separated
(``https://jm-1:8081,https://jm-2:8081``; a bare host takes ``port`` and ``http://``),
``password`` the bearer token, ``extra`` ``{"ca_file": "/path/ca.pem"}`` to verify a cluster's
TLS certificate with its own CA, ``{"verify": false}`` not to verify it (tests only), and
``{"timeout": 60}``, how long one call keeps trying every JobManager.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from airflow.sdk import BaseHook

from steward_airflow.api import Endpoint, StewardApi, addresses_of

T = TypeVar("T")


class StewardHook(BaseHook):
    """Talks to the Steward cluster of connection ``steward_conn_id``."""

    conn_name_attr = "steward_conn_id"
    default_conn_name = "steward_default"
    conn_type = "steward"
    hook_name = "Steward"

    def __init__(self, steward_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.steward_conn_id = steward_conn_id

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        return {
            "hidden_fields": ["schema", "login"],
            "relabeling": {"host": "JobManager URL(s), comma-separated", "password": "Token"},
            "placeholders": {
                "host": "https://jm-1:8081,https://jm-2:8081",
                "extra": '{"ca_file": "/etc/steward/ca.pem", "timeout": 60}',
            },
        }

    def endpoint(self) -> Endpoint:
        return endpoint_of(self.get_connection(self.steward_conn_id))

    def run(self, call: Callable[[StewardApi], Awaitable[T]]) -> T:
        """``call(api)`` run to its end (from synchronous code) with a fresh API client."""
        return asyncio.run(_with_api(self.endpoint(), call))


def endpoint_of(connection: Any) -> Endpoint:
    """The :class:`Endpoint` of an Airflow connection (see the module docstring)."""
    extra: dict[str, Any] = dict(connection.extra_dejson or {})
    verify: bool | str = extra.get("ca_file") or bool(extra.get("verify", True))
    return Endpoint(
        addresses=addresses_of(connection.host or "", connection.port),
        token=connection.password or None,
        verify=verify,
        timeout=float(extra.get("timeout", 60.0)),
    )


async def _with_api(endpoint: Endpoint, call: Callable[[StewardApi], Awaitable[T]]) -> T:
    async with StewardApi(endpoint) as api:
        return await call(api)

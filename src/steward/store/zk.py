"""Small helpers the stores share for reading ZooKeeper through kazoo.

Reads are not fenced (any JobManager may read); they translate kazoo's exceptions into
Steward's so that nothing raw escapes the store layer.
"""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from steward.ha.fencing import translate


def read(client: KazooClient, path: str) -> tuple[bytes, Any] | None:
    """``(data, stat)`` of ``path``, or None if it does not exist."""
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None
    except (KazooException, KazooTimeoutError) as exc:
        raise translate(exc, path) from exc
    return bytes(data or b""), stat


def children(client: KazooClient, path: str) -> list[str]:
    """Sorted child names of ``path``; an absent parent has none."""
    try:
        return sorted(client.get_children(path))
    except NoNodeError:
        return []
    except (KazooException, KazooTimeoutError) as exc:
        raise translate(exc, path) from exc

"""A client's TLS context, made once per process for the same settings and files.

Making a verifying context loads a CA bundle: about 60 to 80 ms of CPU for the system's. A
program that makes a :class:`steward.Client` per task (an orchestrator's operator, a script
in a loop, 16 threads each with their own) paid that on every one, more than a hundred
submissions' worth of the client's own CPU. An ``ssl.SSLContext`` is made to be shared by
many connections and threads, so the clients of one process share one per
:class:`~steward.config.TlsSettings`, made again when a file it names changed (its identity
as ``os.stat`` gives it: :func:`steward.client.file_hashes.identity`). The system's CA store
is read once per process, as every long-lived client does.
"""

from __future__ import annotations

import threading
from pathlib import Path

from steward.client.file_hashes import identity
from steward.config import TlsSettings
from steward.tls.contexts import ClientTls, client_tls

MAX_CONTEXTS = 16
"""Contexts kept at most (settings in use by one process are few); the oldest goes first."""

_Key = tuple[TlsSettings | None, tuple[tuple[int, ...], ...]]
_kept: dict[_Key, ClientTls] = {}
_lock = threading.Lock()


def shared_client_tls(tls: TlsSettings | None) -> ClientTls:
    """:func:`steward.tls.contexts.client_tls` of ``tls``, shared with every earlier call of
    the same settings whose files are unchanged since."""
    files = _identities(tls)
    if files is None:  # a file cannot be read: client_tls says why
        return client_tls(tls)
    key = (tls, files)
    with _lock:
        kept = _kept.get(key)
    if kept is not None:
        return kept
    made = client_tls(tls)
    with _lock:
        _kept[key] = made
        while len(_kept) > MAX_CONTEXTS:
            del _kept[next(iter(_kept))]
    return made


def _identities(tls: TlsSettings | None) -> tuple[tuple[int, ...], ...] | None:
    """The identity of each file ``tls`` names (CA, certificate, key), or None if one cannot
    be read."""
    if tls is None:
        return ()
    paths: list[Path] = [p for p in (tls.ca, tls.certificate, tls.key) if p is not None]
    try:
        return tuple(tuple(identity(path.stat())) for path in paths)
    except OSError:
        return None

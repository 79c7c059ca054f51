"""Asking a ZooKeeper server about itself with its four-letter words (``srvr``, ``cons``).

These answer on the client port without a session, so they work on a server that is up but
not (yet) part of a quorum, and they time out on a frozen one: exactly what a health probe
needs. The server must whitelist them (``4lw.commands.whitelist``).
"""

from __future__ import annotations

import logging
import re
import socket
from enum import StrEnum

from steward.zookeeper.layout import LOOPBACK

logger = logging.getLogger(__name__)

_MODE = re.compile(r"^Mode: (\w+)\s*$", re.MULTILINE)
# `cons` lists one connection per line: " /127.0.0.1:54321[1](queued=0,recved=1,...)".
_CONNECTION = re.compile(r"^\s*/([0-9a-fA-F.:]+):(\d+)\[", re.MULTILINE)


class ServerMode(StrEnum):
    """The role a serving ZooKeeper server reports."""

    STANDALONE = "standalone"
    LEADER = "leader"
    FOLLOWER = "follower"
    OBSERVER = "observer"


def four_letter_word(port: int, word: str, *, host: str = LOOPBACK, timeout: float = 1.0) -> str:
    """Send ``word`` to the server on ``host:port``; its whole answer, or "" if none came.

    "" covers refused, reset and timed-out connections alike: to a caller they all mean "not
    answering".
    """
    chunks: list[bytes] = []
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(word.encode("ascii"))
            while chunk := sock.recv(4096):
                chunks.append(chunk)
    except OSError as exc:
        logger.debug("no answer to %s port=%d error=%s", word, port, exc)
        if not chunks:
            return ""
    return b"".join(chunks).decode("utf-8", errors="replace")


def serving_mode(port: int, *, host: str = LOOPBACK, timeout: float = 1.0) -> ServerMode | None:
    """The mode of the server on ``port`` if it serves clients, else None.

    A server that is up but has no quorum answers ``srvr`` with "not currently serving
    requests" and no ``Mode:`` line, so it counts as not serving.
    """
    match = _MODE.search(four_letter_word(port, "srvr", host=host, timeout=timeout))
    if match is None:
        return None
    try:
        return ServerMode(match.group(1))
    except ValueError:
        logger.warning("unknown ZooKeeper mode port=%d mode=%s", port, match.group(1))
        return None


def connected_clients(
    port: int, *, host: str = LOOPBACK, timeout: float = 1.0
) -> list[tuple[str, int]]:
    """The (host, port) of every client connection of the server on ``port`` (``cons``)."""
    answer = four_letter_word(port, "cons", host=host, timeout=timeout)
    return [(host, int(client_port)) for host, client_port in _CONNECTION.findall(answer)]

"""A stand-alone leadership contender process: ``python -m steward.demo.contender``.

Used by the demo, the benchmarks and the tests to have real processes contend, be killed with
real signals, and take over. SIGTERM or SIGINT releases leadership at once and exits; SIGKILL
leaves the session to expire. Grants and revocations are printed as JSON lines on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from steward.config import parse_duration
from steward.ha.election import LeaderElection, Leadership
from steward.ha.session import Session


def _emit(event: str, contender: str, epoch: int) -> None:
    print(json.dumps({"event": event, "contender": contender, "epoch": epoch, "at": time.time()}))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quorum", required=True)
    parser.add_argument("--root", required=True, help="cluster root znode, e.g. /steward/demo")
    parser.add_argument("--id", required=True, help="contender id")
    parser.add_argument("--address", default="")
    parser.add_argument("--session-timeout", default="4s")
    parser.add_argument("--no-tolerate-suspended", action="store_true")
    args = parser.parse_args(argv)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    session = Session(
        args.quorum, args.root, session_timeout=parse_duration(args.session_timeout), name=args.id
    ).start()
    election = LeaderElection(
        session,
        args.id,
        args.address or f"pid:{os.getpid()}",
        tolerate_suspended=not args.no_tolerate_suspended,
        on_granted=lambda lead: _emit("granted", args.id, lead.epoch),
        on_revoked=lambda lead: _emit("revoked", args.id, lead.epoch),
    ).start()
    _emit("started", args.id, 0)
    stop.wait()
    leadership: Leadership | None = election.leadership
    election.stop()
    session.close()
    _emit("stopped", args.id, leadership.epoch if leadership else 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

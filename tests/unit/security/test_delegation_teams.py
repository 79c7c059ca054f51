"""A standby vouching for a caller (steward.security.delegation) carries its teams too, and a
vouched team that is not a name spoils the whole assertion (the internal credential is then
refused as ever)."""

from __future__ import annotations

from pathlib import Path

from steward.security.delegation import ON_BEHALF_TEAMS, asserted, headers_for
from steward.security.identity import Identity
from steward.tls.certificates import ensure_local_tls, local_hosts
from steward.wire.tokens import Role


def _scope(headers: dict[str, str], member_pem: str) -> dict[str, object]:
    return {
        "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        "extensions": {"tls": {"client_cert_chain": [member_pem]}},
    }


def test_teams_travel_with_the_vouched_caller(tmp_path: Path) -> None:
    member = ensure_local_tls(tmp_path / "ca", local_hosts()).certificate.read_text()
    caller = Identity(name="etl-robot", role=Role.SUBMITTER, teams=frozenset({"etl", "ml"}))
    assert asserted(_scope(headers_for(caller), member)) == caller
    teamless = Identity(name="board", role=Role.VIEWER)
    assert asserted(_scope(headers_for(teamless), member)) == teamless
    bad = {**headers_for(caller), ON_BEHALF_TEAMS: "etl,no spaces"}
    assert asserted(_scope(bad, member)) is None

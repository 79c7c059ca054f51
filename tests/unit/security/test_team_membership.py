"""Teams own jobs (steward.security.teams): the team a submission is stored as, whose jobs a
caller sees, and the credentials that carry teams (tokens, client certificates' OUs, a
standby's vouching headers). Pure logic; the routes are tests/e2e/cluster/test_teams.py's."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from steward.security.asgi import AuthMiddleware
from steward.security.authenticator import Authenticator
from steward.security.certificates import identity_of
from steward.security.delegation import ON_BEHALF_TEAMS, headers_for
from steward.security.identity import ANONYMOUS_ADMIN, Identity
from steward.security.teams import TeamRefusedError, TeamScope, scope_of, submission_team
from steward.security.tokens import mint
from steward.testing.credentials import MemorySecurity, auth_headers
from steward.tls.certificates import ensure_local_tls, issue_client_certificate, local_hosts
from steward.tls.peer import WithPeerCertificate
from steward.wire.tokens import CreateTokenRequest, Role, TokenRecord

DEFAULT = "default"


def who(role: Role, *teams: str) -> Identity:
    return Identity(name="someone", role=role, teams=frozenset(teams))


def test_a_caller_with_one_team_submits_as_it_and_may_name_only_its_own() -> None:
    alice = who(Role.SUBMITTER, "team-a")
    assert submission_team(alice, None, DEFAULT) == "team-a"
    assert submission_team(alice, "team-a", DEFAULT) == "team-a"
    with pytest.raises(TeamRefusedError, match="may not submit as team 'team-b'"):
        submission_team(alice, "team-b", DEFAULT)


def test_a_caller_in_several_teams_must_name_one() -> None:
    both = who(Role.SUBMITTER, "team-a", "team-b")
    with pytest.raises(TeamRefusedError, match="several teams"):
        submission_team(both, None, DEFAULT)
    assert submission_team(both, "team-b", DEFAULT) == "team-b"


def test_a_caller_in_no_team_is_in_the_default_team() -> None:
    nobody = who(Role.SUBMITTER)
    assert submission_team(nobody, None, DEFAULT) == DEFAULT
    with pytest.raises(TeamRefusedError):
        submission_team(nobody, "team-a", DEFAULT)
    assert scope_of(nobody, DEFAULT) == TeamScope(frozenset({DEFAULT}), DEFAULT)


def test_an_admin_sees_every_team_and_submits_as_any() -> None:
    admin = who(Role.ADMIN, "ops")
    assert scope_of(admin, DEFAULT) is None
    assert scope_of(ANONYMOUS_ADMIN, DEFAULT) is None  # auth off: nothing changes
    assert submission_team(admin, "team-a", DEFAULT) == "team-a"
    assert submission_team(admin, None, DEFAULT) == "ops"


def test_a_scope_sees_its_teams_and_jobs_stored_before_teams_are_the_default_teams() -> None:
    scope = scope_of(who(Role.VIEWER, "team-a", DEFAULT), DEFAULT)
    assert scope is not None
    assert scope.sees("team-a") and scope.sees(DEFAULT) and scope.sees(None)
    assert not scope.sees("team-b")
    assert scope.stored_as() == [DEFAULT, "team-a", None]
    only_a = scope_of(who(Role.VIEWER, "team-a"), DEFAULT)
    assert only_a is not None and not only_a.sees(None)
    assert only_a.narrowed("team-b").teams == frozenset()


def test_a_tokens_teams_reach_its_identity_and_old_records_have_none() -> None:
    token, record = mint("alice", Role.SUBMITTER, teams=["team-b", "team-a"])
    stored = TokenRecord.from_json(record.to_json())
    assert stored.teams == ["team-b", "team-a"]
    security = MemorySecurity()
    security.tokens.create(stored)
    identity = security.api.authenticator.verify(token)
    assert identity is not None and identity.teams == frozenset({"team-a", "team-b"})
    before = record.model_dump(mode="json", by_alias=True)
    del before["teams"]
    old = TokenRecord.model_validate(before)
    assert old.teams == []
    authenticator = Authenticator({old.id: old}.get, None)
    found = authenticator.verify(token)
    assert found is not None and found.teams == frozenset()


def test_a_token_request_names_valid_teams_sorted_once() -> None:
    request = CreateTokenRequest(name="x", role=Role.VIEWER, teams=["b", "a", "b"])
    assert request.teams == ["a", "b"]
    with pytest.raises(ValueError, match="invalid team"):
        CreateTokenRequest(name="x", role=Role.VIEWER, teams=["no spaces"])


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root: Path = tmp_path_factory.mktemp("ca")
    ca = ensure_local_tls(root / "ca", local_hosts())
    out = root / "issued"
    robot = issue_client_certificate(ca.folder, "robot", "submitter", out, teams=["etl", "ml"])
    plain = issue_client_certificate(ca.folder, "plain", "viewer", out)
    return {
        "robot": robot.certificate.read_text(),
        "plain": plain.certificate.read_text(),
        "server": ca.certificate.read_text(),
    }


def test_a_client_certificates_organizational_units_are_its_teams(
    certificates: dict[str, str],
) -> None:
    robot = identity_of(certificates["robot"])
    assert robot is not None and robot.teams == frozenset({"etl", "ml"})
    plain = identity_of(certificates["plain"])
    assert plain is not None and plain.teams == frozenset()


async def _whoami(request: Request) -> JSONResponse:
    identity: Identity = request.state.identity
    return JSONResponse({"name": identity.name, "teams": sorted(identity.teams)})


def test_a_standby_vouches_for_a_certificates_caller_with_its_teams(
    certificates: dict[str, str],
) -> None:
    security = MemorySecurity()
    app = Starlette(routes=[Route("/v1/who", _whoami, methods=["POST"])])
    app.add_middleware(AuthMiddleware, authenticator=security.api.authenticator, certificates=True)
    leader = TestClient(WithPeerCertificate(app, certificates["server"]))  # type: ignore[arg-type]
    robot = Identity(name="robot", role=Role.SUBMITTER, teams=frozenset({"etl", "ml"}))
    vouched = {**auth_headers(security.internal), **headers_for(robot)}
    assert vouched[ON_BEHALF_TEAMS] == "etl,ml"
    assert leader.post("/v1/who", headers=vouched).json() == {
        "name": "robot",
        "teams": ["etl", "ml"],
    }
    # A header naming something that cannot be a team vouches for nobody.
    forged = {**vouched, ON_BEHALF_TEAMS: "etl,not a team"}
    assert leader.post("/v1/who", headers=forged).status_code == 403

"""The middleware's other credentials (steward.security.asgi): the web UI's cookie with its CSRF
header and login redirect, and a verified client certificate (CN the name, O the role), over a
small app; the certificate reaches the scope as steward.tls.peer puts it there. The
process-level proof of certificates is tests/e2e/cluster/test_client_certificates.py."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from steward.security.asgi import COOKIE, CSRF_HEADER, PROBES, AuthMiddleware
from steward.security.certificates import identity_of
from steward.security.delegation import ON_BEHALF_NAME, ON_BEHALF_ROLE
from steward.security.identity import Identity
from steward.testing.credentials import MemorySecurity, auth_headers
from steward.tls.certificates import ensure_local_tls, issue_client_certificate, local_hosts
from steward.tls.peer import WithPeerCertificate
from steward.wire.tokens import Role


async def _whoami(request: Request) -> JSONResponse:
    identity: Identity | None = getattr(request.state, "identity", None)
    if identity is None:
        return JSONResponse({"name": "-"})
    return JSONResponse({"name": identity.name, "role": str(identity.role)})


def _app(security: MemorySecurity, *, certificates: bool = False) -> Starlette:
    app = Starlette(
        routes=[
            Route("/v1/who", _whoami, methods=["GET", "POST"]),
            Route("/ui/jobs", _whoami),
            Route("/ui/login", _whoami),
        ]
    )
    app.add_middleware(
        AuthMiddleware,
        authenticator=security.api.authenticator,
        public_paths=PROBES | {"/ui/login"},
        certificates=certificates,
        cookie=True,
        login_page="/ui/login",
    )
    return app


def test_the_uis_cookie_is_a_credential_and_writes_need_the_csrf_header() -> None:
    security = MemorySecurity()
    token = security.token("uma", Role.SUBMITTER)
    browser = TestClient(_app(security), cookies={COOKIE: token})
    assert browser.get("/v1/who").json() == {"name": "uma", "role": "submitter"}
    # A write authenticated by the cookie alone could be another site's forged form: refused
    forged = browser.post("/v1/who")
    assert forged.status_code == 403
    assert CSRF_HEADER in forged.json()["message"]
    assert browser.post("/v1/who", headers={CSRF_HEADER: "1"}).status_code == 200
    # An Authorization header decides over the cookie, even a bad one
    assert browser.get("/v1/who", headers={"Authorization": "Bearer nope"}).status_code == 401
    # A token in the header needs no CSRF header (no browser sends it on its own)
    api = TestClient(_app(security), headers=auth_headers(token))
    assert api.post("/v1/who").status_code == 200


def test_without_credentials_pages_redirect_to_the_login_and_the_api_says_401() -> None:
    security = MemorySecurity()
    stranger = TestClient(_app(security), follow_redirects=False)
    page = stranger.get("/ui/jobs")
    assert (page.status_code, page.headers["location"]) == (303, "/ui/login")
    assert stranger.get("/ui/login").json() == {"name": "-"}  # public: no identity needed
    assert stranger.post("/ui/jobs").status_code == 401  # only GETs of pages redirect
    assert stranger.get("/v1/who").status_code == 401
    bad_cookie = TestClient(_app(security), cookies={COOKIE: "stw_0123456789ab_x"})
    assert bad_cookie.get("/v1/who").status_code == 401


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("ca")
    ca = ensure_local_tls(root / "ca", local_hosts())
    out = root / "issued"
    pems = {
        name: issue_client_certificate(ca.folder, name, role, out).certificate.read_text()
        for name, role in (("robot", "submitter"), ("board", "viewer"), ("boss", "admin"))
    }
    pems["server"] = ca.certificate.read_text()  # the cluster's own: no role
    return pems


def test_a_client_certificate_names_the_caller_when_certificates_are_on(
    certificates: dict[str, str],
) -> None:
    security = MemorySecurity()
    with_robot = WithPeerCertificate(_app(security, certificates=True), certificates["robot"])
    machine = TestClient(with_robot)  # type: ignore[arg-type]
    assert machine.get("/v1/who").json() == {"name": "robot", "role": "submitter"}
    # A bearer token decides instead of the certificate
    viewer = security.token("vera", Role.VIEWER)
    assert machine.get("/v1/who", headers=auth_headers(viewer)).json()["name"] == "vera"
    # Off (the default), the same certificate is no credential
    off = TestClient(WithPeerCertificate(_app(security), certificates["robot"]))  # type: ignore[arg-type]
    assert off.get("/v1/who").status_code == 401
    # A certificate without a role is none either
    server = WithPeerCertificate(_app(security, certificates=True), certificates["server"])
    assert TestClient(server).get("/v1/who").status_code == 401  # type: ignore[arg-type]


def test_the_subject_gives_name_and_role(certificates: dict[str, str]) -> None:
    assert identity_of(certificates["board"]) == Identity(name="board", role=Role.VIEWER)
    assert identity_of(certificates["boss"]) == Identity(name="boss", role=Role.ADMIN)
    assert identity_of(certificates["server"]) is None
    assert identity_of("not a certificate") is None


def test_the_internal_credential_vouches_for_a_certificates_caller_where_they_count(
    certificates: dict[str, str],
) -> None:
    security = MemorySecurity()
    vouched = {
        **auth_headers(security.internal),
        ON_BEHALF_NAME: "etl-robot",
        ON_BEHALF_ROLE: "submitter",
    }

    def asked(peer: str | None, *, certificates_count: bool = True) -> TestClient:
        app = _app(security, certificates=certificates_count)
        return TestClient(app if peer is None else WithPeerCertificate(app, peer))  # type: ignore[arg-type]

    # A leader that takes certificates takes a standby's word for a certificate's caller,
    # from a peer with the cluster's own certificate
    standby = asked(certificates["server"])
    assert standby.post("/v1/who", headers=vouched).json() == {
        "name": "etl-robot",
        "role": "submitter",
    }
    # Only the internal credential vouches: a user's token with the same headers is the user
    user = security.token("uma", Role.VIEWER)
    as_user = {**vouched, **auth_headers(user)}
    assert standby.get("/v1/who", headers=as_user).json() == {"name": "uma", "role": "viewer"}
    # A role that is no user's, or no name: the internal credential is refused as ever
    for bad in ({ON_BEHALF_ROLE: "internal"}, {ON_BEHALF_NAME: "no spaces"}):
        assert standby.get("/v1/who", headers={**vouched, **bad}).status_code == 403
    assert standby.get("/v1/who", headers=auth_headers(security.internal)).status_code == 403
    # A stolen internal credential alone vouches for nobody: no member's certificate (none,
    # or a user's), or certificates are no credential here
    assert asked(None).post("/v1/who", headers=vouched).status_code == 403
    assert asked(certificates["robot"]).post("/v1/who", headers=vouched).status_code == 403
    off = asked(certificates["server"], certificates_count=False)
    assert off.post("/v1/who", headers=vouched).status_code == 403

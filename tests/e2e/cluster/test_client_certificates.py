"""Client certificates as credentials, for machines (issue 13): with
``security.auth.client-certificates`` and ``rest.ssl.client-auth=optional``, a real JobManager
takes a certificate its CA signed as the caller: CN the name, O the role. A submitter's
certificate submits (the job records its name) and may not manage tokens; another submitter's
may not cancel that job; a viewer's reads only; a certificate without a role (the cluster's own)
is no credential (401), and one of another CA is refused in the handshake. Tokens keep working
beside certificates.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from e2e.cluster.cluster_cli import LONG_RUNNING
from steward.client import Client
from steward.config.configuration import validate
from steward.testing.credentials import internal_token_file, kit_admin_token
from steward.testing.processes import ProcessCluster
from steward.tls.certificates import (
    ClientCertificate,
    TlsFiles,
    ensure_local_tls,
    issue_client_certificate,
    local_hosts,
)
from steward.tls.contexts import client_tls
from steward.zookeeper.managed import ManagedEnsemble
from support import wait_until

pytestmark = pytest.mark.zookeeper


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return ensure_local_tls(tmp_path_factory.mktemp("ca"), local_hosts())


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ManagedEnsemble, ca: TlsFiles
) -> Iterator[ProcessCluster]:
    settings = {
        **{key: str(value) for key, value in ca.settings().items()},
        "rest.ssl.enabled": "true",
        "rest.ssl.client-auth": "optional",
        "security.auth.client-certificates": "true",
    }
    root = tmp_path_factory.mktemp("cluster")
    with ProcessCluster(
        root, zookeeper.connect_string, f"certs-{root.name}", extra=settings
    ) as kit:
        kit.start_one_of_each()
        yield kit


def _rest(ca: TlsFiles, issued: ClientCertificate | None) -> dict[str, str]:
    rest = {"rest.ssl.enabled": "true", "rest.ssl.ca": str(ca.ca)}
    if issued is not None:
        rest |= {"rest.ssl.certificate": str(issued.certificate), "rest.ssl.key": str(issued.key)}
    return rest


def _client(cluster: ProcessCluster, ca: TlsFiles, issued: ClientCertificate, home: Path) -> Client:
    rest = _rest(ca, issued)
    config = validate(rest, dict.fromkeys(rest, "test"))
    addresses = [p.address for p in cluster.jobmanagers()]
    return Client(addresses, config=config, timeout=20, workdir=home)


def _http(ca: TlsFiles, issued: ClientCertificate | None) -> httpx.Client:
    rest = _rest(ca, issued)
    tls = client_tls(validate(rest, dict.fromkeys(rest, "test")).settings.tls)
    return httpx.Client(verify=tls.context, timeout=10)


def test_a_certificate_names_the_caller_and_its_role(
    cluster: ProcessCluster, ca: TlsFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STEWARD_TOKEN", raising=False)  # the certificate is the only credential
    certs = tmp_path / "certs"
    robot = issue_client_certificate(ca.folder, "etl-robot", "submitter", certs)
    other = issue_client_certificate(ca.folder, "other-robot", "submitter", certs)
    viewer = issue_client_certificate(ca.folder, "dashboard", "viewer", certs)
    address = cluster.jobmanagers()[0].address
    # When a machine with a submitter's certificate (and no token) submits a job
    with _client(cluster, ca, robot, tmp_path) as client:
        job = client.submit(LONG_RUNNING, args=["--ticks", "600", "--interval", "0.1"])
        # Then the job records the certificate's name as its submitter
        assert client.job(job.job_id).submitter == "etl-robot"
    # And its role is the certificate's: a submitter may not manage tokens
    with _http(ca, robot) as http:
        assert http.get(f"{address}/v1/tokens").status_code == 403
    # And another submitter's certificate may not cancel that job
    with _http(ca, other) as http:
        refused = http.post(f"{address}/v1/jobs/{job.job_id}/cancel")
        assert refused.status_code == 403, refused.text
        assert "submitted by etl-robot" in refused.json()["message"]
    # And a viewer's certificate reads, but may not submit
    with _http(ca, viewer) as http:
        assert http.get(f"{address}/v1/jobs/{job.job_id}").status_code == 200
        assert http.post(f"{address}/v1/jobs", json={}).status_code == 403
    # And the submitter's own certificate cancels it
    with _http(ca, robot) as http:
        assert http.post(f"{address}/v1/jobs/{job.job_id}/cancel").status_code in (200, 202)
    # And a token still works beside certificates
    with _http(ca, None) as http:
        token = {"Authorization": f"Bearer {kit_admin_token()}"}
        assert http.get(f"{address}/v1/tokens", headers=token).status_code == 200


def test_a_certificate_without_a_role_or_from_another_ca_is_no_credential(
    cluster: ProcessCluster, ca: TlsFiles, tmp_path: Path
) -> None:
    address = cluster.jobmanagers()[0].address
    # The cluster's own certificate is verified in the handshake but names no role: 401
    own = ClientCertificate(ca.certificate, ca.key)
    with _http(ca, own) as http:
        answer = http.get(f"{address}/v1/jobs")
        assert answer.status_code == 401, answer.text
    # No certificate and no token: 401 (client-auth is optional, the probes answer)
    with _http(ca, None) as http:
        assert http.get(f"{address}/v1/jobs").status_code == 401
        assert http.get(f"{address}/healthz").status_code == 200
    # A certificate of another CA, however named, is refused in the handshake
    stranger_ca = ensure_local_tls(tmp_path / "stranger-ca", local_hosts())
    forged = issue_client_certificate(stranger_ca.folder, "etl-robot", "admin", tmp_path / "f")
    with _http(ca, forged) as http, pytest.raises(httpx.TransportError):
        http.get(f"{address}/v1/jobs")


def test_a_certificates_caller_keeps_its_identity_through_a_standby(
    cluster: ProcessCluster, ca: TlsFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23, item 7: a standby forwards a certificate's caller to the leader as that caller
    (before, only ``Authorization`` went along: the leader saw no credential and answered 401)."""
    monkeypatch.delenv("STEWARD_TOKEN", raising=False)
    standby = cluster.start_jobmanager("jm-standby")

    def standing_by() -> bool:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            return bool(cluster.get(standby, "/healthz").get("role") == "standby")
        return False

    wait_until(standing_by, 60, message="jm-standby stands by")
    certs = tmp_path / "certs"
    robot = issue_client_certificate(ca.folder, "etl-robot", "submitter", certs)
    other = issue_client_certificate(ca.folder, "other-robot", "submitter", certs)
    viewer = issue_client_certificate(ca.folder, "dashboard", "viewer", certs)
    jobs = f"{standby.address}/v1/jobs"
    with _http(ca, robot) as http:
        body = {
            "spec": {"job_id": "via-standby", "args": ["--ticks", "600", "--interval", "0.1"]},
            "artifact": {
                "filename": LONG_RUNNING.name,
                "data_b64": base64.b64encode(LONG_RUNNING.read_bytes()).decode(),
            },
        }
        created = http.post(jobs, json=body)
        assert created.status_code == 201, created.text
        assert created.json()["submitter"] == "etl-robot"  # the leader saw the certificate's
    with _http(ca, viewer) as http:  # and its role: a viewer's write is refused by the leader
        assert http.post(jobs, json=body).status_code == 403
    with _http(ca, other) as http:  # another submitter may not cancel it
        refused = http.post(f"{jobs}/via-standby/cancel")
        assert refused.status_code == 403, refused.text
    with _http(ca, robot) as http:
        assert http.post(f"{jobs}/via-standby/cancel").status_code in (200, 202)
    # The internal credential alone is still no user's credential anywhere.
    with _http(ca, None) as http:
        secret = internal_token_file(cluster.workdir).read_text().strip()
        internal = {"Authorization": f"Bearer {secret}"}
        assert http.get(jobs, headers=internal).status_code == 403

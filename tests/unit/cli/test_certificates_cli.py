"""``steward certificate create``: a client certificate from the local cluster's CA, whose
subject a JobManager reads as the caller (CN) and role (O); a clear line without a CA or with a
bad name, and nothing written."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from steward.security.certificates import identity_of
from steward.security.identity import Identity
from steward.tls.certificates import ensure_local_tls, local_hosts
from steward.wire.tokens import Role
from unit.cli.conftest import Run


def test_it_issues_a_certificate_the_jobmanagers_read_as_name_and_role(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ensure_local_tls(tmp_path / ".steward" / "tls", local_hosts())
    code, out, err = run("certificate", "create", "etl", "--role", "viewer", "--out", "certs")
    assert code == 0, err
    certificate, key = (Path(line) for line in out.split())
    assert certificate == tmp_path / "certs" / "etl.pem"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert identity_of(certificate.read_text()) == Identity(name="etl", role=Role.VIEWER)
    assert "rest.ssl.certificate=" in err


def test_without_a_local_ca_or_with_a_bad_name_it_says_so(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _out, err = run("certificate", "create", "etl", "--out", "certs")
    assert code == 2
    assert "holds no usable CA" in err and "steward cluster start --tls" in err
    assert "Traceback" not in err
    code, _out, err = run("certificate", "create", "../etl", "--out", "certs")
    assert code == 2 and "NAME" in err
    assert not (tmp_path / "certs").exists()

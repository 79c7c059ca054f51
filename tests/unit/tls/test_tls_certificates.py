"""The local cluster's private CA and certificate (``steward cluster start --tls``): what they
name, how long they last, who may read the keys, and when they are made anew."""

from __future__ import annotations

import datetime
import socket
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from steward.tls.certificates import (
    CERTIFICATE_VALIDITY,
    TlsFiles,
    certificate_hosts,
    ensure_local_tls,
    local_hosts,
)

NOW = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC)


def _certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def files(tmp_path: Path) -> TlsFiles:
    return ensure_local_tls(tmp_path / "tls", local_hosts(["10.1.2.3"]), name="c1", now=NOW)


def test_the_certificate_names_this_machine_and_the_hosts_given(files: TlsFiles) -> None:
    names = certificate_hosts(_certificate(files.certificate))
    assert {"localhost", "127.0.0.1", "::1", "10.1.2.3"} <= names
    assert socket.gethostname().lower() in names
    # IP addresses are IP entries (what a client checks an address against), not DNS names
    alternative = _certificate(files.certificate).extensions.get_extension_for_class(
        x509.SubjectAlternativeName
    )
    assert "127.0.0.1" not in alternative.value.get_values_for_type(x509.DNSName)


def test_the_certificate_is_signed_by_the_ca_for_server_and_client_use(files: TlsFiles) -> None:
    ca, certificate = _certificate(files.ca), _certificate(files.certificate)
    certificate.verify_directly_issued_by(ca)  # raises if not
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.value.ca is False
    usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usage) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}


def test_validity_starts_now_and_lasts_the_documented_time(files: TlsFiles) -> None:
    certificate = _certificate(files.certificate)
    assert certificate.not_valid_before_utc <= NOW < certificate.not_valid_after_utc
    assert certificate.not_valid_after_utc == (NOW + CERTIFICATE_VALIDITY).replace(microsecond=0)
    ca = _certificate(files.ca)
    assert ca.not_valid_after_utc > certificate.not_valid_after_utc


def test_keys_are_the_owners_alone_and_certificates_readable(files: TlsFiles) -> None:
    assert _mode(files.folder) == 0o700
    assert _mode(files.key) == 0o600
    assert _mode(files.ca_key) == 0o600
    assert _mode(files.certificate) == 0o644
    assert _mode(files.ca) == 0o644
    assert "PRIVATE KEY" in files.key.read_text()
    assert "PRIVATE KEY" not in files.certificate.read_text()


def test_a_second_start_keeps_both(files: TlsFiles) -> None:
    ca, certificate = files.ca.read_bytes(), files.certificate.read_bytes()
    later = NOW + datetime.timedelta(days=10)
    again = ensure_local_tls(files.folder, local_hosts(["10.1.2.3"]), name="c1", now=later)
    assert (again.ca.read_bytes(), again.certificate.read_bytes()) == (ca, certificate)


def test_a_new_host_gets_a_new_certificate_from_the_same_ca(files: TlsFiles) -> None:
    ca = files.ca.read_bytes()
    ensure_local_tls(files.folder, local_hosts(["10.9.9.9"]), name="c1", now=NOW)
    assert files.ca.read_bytes() == ca
    assert "10.9.9.9" in certificate_hosts(_certificate(files.certificate))
    _certificate(files.certificate).verify_directly_issued_by(_certificate(files.ca))


def test_a_certificate_about_to_expire_is_renewed_and_the_ca_kept(files: TlsFiles) -> None:
    ca, old = files.ca.read_bytes(), _certificate(files.certificate)
    later = old.not_valid_after_utc - datetime.timedelta(days=10)
    ensure_local_tls(files.folder, local_hosts(["10.1.2.3"]), name="c1", now=later)
    assert files.ca.read_bytes() == ca
    assert _certificate(files.certificate).not_valid_after_utc > later + datetime.timedelta(
        days=300
    )


def test_a_ca_about_to_expire_is_replaced_with_a_new_certificate(files: TlsFiles) -> None:
    old_ca = _certificate(files.ca)
    later = old_ca.not_valid_after_utc - datetime.timedelta(days=1)
    ensure_local_tls(files.folder, local_hosts(), name="c1", now=later)
    new_ca = _certificate(files.ca)
    assert new_ca.serial_number != old_ca.serial_number
    _certificate(files.certificate).verify_directly_issued_by(new_ca)


def test_a_damaged_key_is_made_anew(files: TlsFiles) -> None:
    files.key.write_text("not a key")
    ensure_local_tls(files.folder, local_hosts(["10.1.2.3"]), name="c1", now=NOW)
    assert "PRIVATE KEY" in files.key.read_text()
    assert _mode(files.key) == 0o600


def test_settings_name_every_file_absolutely(files: TlsFiles) -> None:
    assert files.settings() == {
        "rest.ssl.enabled": True,
        "rest.ssl.certificate": str(files.certificate.absolute()),
        "rest.ssl.key": str(files.key.absolute()),
        "rest.ssl.ca": str(files.ca.absolute()),
    }


def test_local_hosts_drops_wildcards_brackets_and_repeats() -> None:
    hosts = local_hosts(["0.0.0.0", "[::1]", "LOCALHOST.", "jm.example.org"])
    assert hosts.count("::1") == 1
    assert hosts.count("localhost") == 1
    assert "0.0.0.0" not in hosts
    assert "jm.example.org" in hosts

"""A client's TLS context is made once per process for the same settings and files
(:mod:`steward.client.tls_contexts`): a Client made per task does not load a CA bundle each
time, and a CA file that changed is loaded again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from steward.client import Client
from steward.client.tls_contexts import shared_client_tls
from steward.config import TlsSettings
from steward.errors import ConfigurationError
from steward.tls.certificates import TlsFiles, ensure_local_tls, local_hosts


@pytest.fixture
def files(tmp_path: Path) -> TlsFiles:
    return ensure_local_tls(tmp_path / "tls", local_hosts())


def _settings(files: TlsFiles) -> TlsSettings:
    return TlsSettings(enabled=True, certificate=files.certificate, key=files.key, ca=files.ca)


def test_clients_of_the_same_settings_share_one_tls_context(files: TlsFiles) -> None:
    settings = _settings(files)
    assert shared_client_tls(settings) is shared_client_tls(settings)
    assert shared_client_tls(None) is shared_client_tls(None)
    assert shared_client_tls(None) is not shared_client_tls(settings)


def test_a_changed_ca_file_makes_a_new_context(files: TlsFiles, tmp_path: Path) -> None:
    settings = _settings(files)
    first = shared_client_tls(settings)
    other = ensure_local_tls(tmp_path / "other", local_hosts())
    shutil.copyfile(other.ca, files.ca)
    os.utime(files.ca, ns=(1, 1))  # a new inode's size may match: the times still differ
    assert shared_client_tls(settings) is not first


def test_a_missing_ca_file_is_still_an_error_naming_it(files: TlsFiles) -> None:
    settings = _settings(files)
    files.ca.unlink()
    with pytest.raises(ConfigurationError, match=r"ca\.pem"):
        shared_client_tls(settings)


def test_a_client_per_task_reuses_the_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the defaults: no steward.toml here
    first = Client(["https://127.0.0.1:1"], token="t", timeout=1)
    second = Client(["https://127.0.0.1:1"], token="t", timeout=1)
    try:
        assert first._failover._tls is second._failover._tls
    finally:
        first.close()
        second.close()

"""Fixtures of the CLI tests: a fake JobManager behind the job commands, and an in-process run."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.cli import jobs
from steward.client import Client
from steward.config import Configuration
from unit.fake_jobmanager import FakeJobManagers
from unit.steward_cli import Run, run_steward


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeJobManagers:
    monkeypatch.chdir(tmp_path)  # no steward.toml, no .steward: nothing but the fake
    api = FakeJobManagers()

    def open_client(_config: Configuration) -> Client:
        return Client(["http://jm-a:8081"], timeout=api.client_timeout, transport=api.transport())

    monkeypatch.setattr(jobs, "open_client", open_client)
    monkeypatch.setattr("steward.client.waiting._sleep", lambda _s: None)
    monkeypatch.setattr("steward.client.failover._sleep", lambda _s: None)
    return api


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    return lambda *args: run_steward(monkeypatch, capsys, *args)

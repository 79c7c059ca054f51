"""Run the ``steward`` command in-process, through its real entry point and error handling.

Import as ``from unit.steward_cli import run_steward`` (tests/ is on sys.path).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from steward.cli.main import main


def run_steward(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """``steward ARGS``: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["steward", *args])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


Run = Callable[..., tuple[int, str, str]]
"""``run(*args)``: :func:`run_steward` bound to a test's fixtures (the ``run`` fixture)."""

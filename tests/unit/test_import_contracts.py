"""pyproject.toml's import contracts cover every package of src/steward: each is in a layer, and
each `forbidden` contract either forbids it or says here that its sources may import it, so a
new package cannot slip past the rules unnoticed."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "steward"

# What each forbidden contract's sources may import (the layers below them allow it).
BELOW_THE_SUPERVISOR = {
    "artifacts",
    "config",
    "wire",
    "clock",
    "timing",
    "logformat",
    "files",
    "process_name",
    "long_lived_heap",
}
MAY_IMPORT: dict[str, set[str]] = {
    "The runner (the attempt's child process) imports no control-plane code": {
        *BELOW_THE_SUPERVISOR,
        "sparkconf",
        "supervisor",
        "errors",
    },
    "The process supervisor imports neither the managers nor the client": {
        *BELOW_THE_SUPERVISOR,
        "errors",
    },
    "steward.errors imports nothing from Steward": set(),
    "steward.wire (the schema) imports only steward.errors": {"errors"},
    "steward.clock, steward.timing, steward.logformat, steward.files, steward.process_name and "
    "steward.long_lived_heap import no other Steward module": set(),
}


def _packages() -> set[str]:
    modules = {path.stem for path in SOURCE.glob("*.py") if path.name != "__init__.py"}
    packages = {path.name for path in SOURCE.iterdir() if (path / "__init__.py").exists()}
    return modules | packages


def _contracts(kind: str) -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    return [contract for contract in contracts if contract["type"] == kind]


def _between_packages(contract: dict[str, Any]) -> bool:
    """Whether a forbidden contract is about Steward's own packages (one that keeps a
    third-party library out of a package, as fastapi out of the TaskManager, is not)."""
    return any(name.startswith("steward") for name in contract["forbidden_modules"])


def _short(names: list[str]) -> set[str]:
    return {name.removeprefix("steward.") for name in names}


def test_every_package_is_in_a_layer() -> None:
    (layers,) = _contracts("layers")
    layered = _short([name.strip() for layer in layers["layers"] for name in layer.split("|")])
    assert _packages() - layered == set()


@pytest.mark.parametrize(
    "contract",
    [contract for contract in _contracts("forbidden") if _between_packages(contract)],
    ids=lambda c: c["name"][:40],
)
def test_every_forbidden_contract_names_every_package(contract: dict[str, Any]) -> None:
    named = _short(contract["source_modules"]) | _short(contract["forbidden_modules"])
    allowed = MAY_IMPORT[contract["name"]]
    assert named & allowed == set(), "a package is both forbidden and allowed"
    assert _packages() - named - allowed == set(), "forbid it, or add it to MAY_IMPORT"

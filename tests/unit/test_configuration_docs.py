"""docs/configuration.md documents every configuration key, with its real default."""

from __future__ import annotations

from pathlib import Path

from steward.config import OPTIONS, format_duration

DOC = Path(__file__).parents[2] / "docs" / "configuration.md"


def _rendered(default: object) -> str:
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, float):
        return format_duration(default)
    return str(default)


def test_every_key_is_documented_with_its_default() -> None:
    rows = {
        line.split("|")[1].strip().strip("`"): line.split("|")[2].strip().strip("`")
        for line in DOC.read_text().splitlines()
        if line.startswith("| `")
    }
    for option in OPTIONS:
        assert option.key in rows, f"{option.key} is missing from docs/configuration.md"
        if option.default is None:  # derived from other keys; the row says how
            assert "session timeout" in rows[option.key], option.key
            continue
        assert rows[option.key] == _rendered(option.default), option.key


def test_no_documented_key_is_unknown() -> None:
    known = {option.key for option in OPTIONS}
    documented = {
        line.split("|")[1].strip().strip("`")
        for line in DOC.read_text().splitlines()
        if line.startswith("| `") and "." in line.split("|")[1]
    }
    assert documented <= known, documented - known

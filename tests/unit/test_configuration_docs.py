"""docs/configuration.md's table of keys is generated from the key table (steward.config.docs):
the committed file is the generated one, and it documents every key with its real default."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.config import OPTIONS, format_duration
from steward.config.docs import BEGIN, END, main, render

DOC = Path(__file__).parents[2] / "docs" / "configuration.md"


def _rows(text: str) -> dict[str, str]:
    return {
        line.split("|")[1].strip().strip("`"): line.split("|")[2].strip()
        for line in text.splitlines()
        if line.startswith("| `") and "." in line.split("|")[1]
    }


def _written(default: object) -> str:
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, float):
        return f"`{format_duration(default)}`"
    return f"`{default}`" if default != "" else "empty"


def test_the_committed_file_is_the_generated_one() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert render(text) == text, "docs/configuration.md is stale: run python -m steward.config.docs"


def test_every_key_is_documented_with_its_default() -> None:
    rows = _rows(DOC.read_text(encoding="utf-8"))
    for option in OPTIONS:
        assert option.key in rows, f"{option.key} is missing from docs/configuration.md"
        if option.default is None:  # derived from other keys; the row says how
            assert "session timeout" in rows[option.key], option.key
            continue
        assert rows[option.key] == _written(option.default), option.key


def test_no_documented_key_is_unknown() -> None:
    known = {option.key for option in OPTIONS}
    documented = set(_rows(DOC.read_text(encoding="utf-8")))
    assert documented <= known, documented - known


def test_the_check_refuses_a_stale_copy_and_the_generator_fixes_it(tmp_path: Path) -> None:
    # Given a copy whose table lost a key's row
    stale = tmp_path / "configuration.md"
    text = DOC.read_text(encoding="utf-8")
    stale.write_text(
        "\n".join(line for line in text.splitlines() if "`spark.master` |" not in line) + "\n"
    )
    # When it is checked / Then it is refused and left as it was
    assert main([str(stale), "--check"]) == 1
    assert "`spark.master` |" not in stale.read_text()
    # When it is generated / Then it is the committed file again
    assert main([str(stale)]) == 0
    assert stale.read_text() == text
    assert main([str(stale), "--check"]) == 0


def test_a_document_without_the_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="markers"):
        render("# Configuration\n\nno table here\n")
    with pytest.raises(ValueError, match="markers"):
        render(f"{END}\n{BEGIN}\n")

"""docs/configuration.md's table of keys, generated from the key table so the two cannot drift.

The table between :data:`BEGIN` and :data:`END` is written from :data:`~steward.config.keys.OPTIONS`
(key, default as a user writes it, help text); the prose around it is written by hand. After
changing a key::

    python -m steward.config.docs            # rewrites docs/configuration.md
    python -m steward.config.docs --check    # exit 1 when the committed file differs

A unit test runs the check, so a key added without its documentation fails the suite.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from steward.config.keys import OPTIONS
from steward.config.option import Option
from steward.config.units import format_duration

BEGIN = "<!-- keys: generated from src/steward/config/keys*.py by python -m steward.config.docs -->"
END = "<!-- end of the generated keys -->"
DOCUMENT = Path("docs/configuration.md")


def default_text(option: Option) -> str:
    """The default as a user would write it, or what a derived default follows."""
    default = option.default
    if default is None:
        return option.derived_default
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, float):
        return f"`{format_duration(default)}`"
    return f"`{default}`" if default != "" else "empty"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table() -> str:
    """Every key's row, in the table's order."""
    rows = [
        f"| `{option.key}` | {_cell(default_text(option))} | {_cell(option.doc)} |"
        for option in OPTIONS
    ]
    return "\n".join(["| key | default | meaning |", "|---|---|---|", *rows])


def render(document: str) -> str:
    """``document`` with the table between the markers replaced by the generated one."""
    start, end = document.find(BEGIN), document.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the markers {BEGIN!r} and {END!r} are missing or out of order")
    return f"{document[: start + len(BEGIN)]}\n{table()}\n{document[end:]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m steward.config.docs", description=__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DOCUMENT)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    args = parser.parse_args(argv)
    current = args.path.read_text(encoding="utf-8")
    wanted = render(current)
    if args.check:
        stale = wanted != current
        if stale:
            sys.stderr.write(f"{args.path} is stale: run python -m steward.config.docs\n")
        return 1 if stale else 0
    args.path.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

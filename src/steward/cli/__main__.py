"""``python -m steward.cli``: the same as the ``steward`` command."""

from steward.cli.main import main

main()

"""A helper module that a script imports: it travels with the job through ``--py-files``.

Plain Python, no Spark: ``words`` runs inside Spark's Python workers (executors), which is
why the module must reach them too; spark-submit and Steward both ship ``--py-files`` there.
"""

import re

WORD = re.compile("[a-z]+")


def words(line: str) -> list[str]:
    """The words of ``line``: maximal runs of a-z after lower-casing."""
    return WORD.findall(line.lower())


def length_band(word: str) -> str:
    """A word's length as a band: "1-3", "4-6", "7-9" or "10+"."""
    size = len(word)
    if size >= 10:
        return "10+"
    low = (size - 1) // 3 * 3 + 1
    return f"{low}-{low + 2}"

"""Reading a Java properties file, the format of Spark's ``spark-defaults.conf``.

spark-submit's ``--properties-file`` is read with ``java.util.Properties.load`` (as UTF-8)
and every value trimmed; :func:`parse_properties` follows the same rules, so a file that
spark-submit reads gives the same settings here:

- a line whose first non-blank character is ``#`` or ``!`` is a comment; blank lines are skipped;
- a line ending in an odd number of backslashes continues on the next one (whose leading
  blanks are dropped);
- the key ends at the first unescaped ``=``, ``:`` or blank; blanks and one ``=`` or ``:``
  after it separate it from the value;
- ``\\t \\n \\r \\f``, ``\\uXXXX`` and ``\\`` before any other character are escapes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_NEWLINE = re.compile(r"\r\n|\r|\n")
_BLANKS = " \t\f"
_SEPARATORS = "=:"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of properties ``text``; a later key replaces an earlier one.

    Raises ``ValueError`` for a malformed ``\\uXXXX`` escape, as Java does.
    """
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        result[_unescape(key)] = _unescape(value).strip()
    return result


def _logical_lines(text: str) -> Iterator[str]:
    pending: str | None = None
    for natural in _NEWLINE.split(text):
        line = natural.lstrip(_BLANKS)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending:
        yield pending


def _split(line: str) -> tuple[str, str]:
    """``line`` -> (raw key, raw value), as ``Properties.load`` splits it."""
    end, escaped, has_separator = len(line), False, False
    for index, char in enumerate(line):
        if not escaped and (char in _SEPARATORS or char in _BLANKS):
            end, has_separator = index, char in _SEPARATORS
            break
        escaped = char == "\\" and not escaped
    start = end + 1
    while start < len(line):
        char = line[start]
        if char not in _BLANKS:
            if has_separator or char not in _SEPARATORS:
                break
            has_separator = True
        start += 1
    return line[:end], line[start:]


def _unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        index += 1
        if char != "\\" or index >= len(text):
            out.append(char)
            continue
        char = text[index]
        index += 1
        if char == "u":
            digits = text[index : index + 4]
            if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
                raise ValueError(f"malformed \\uxxxx escape: \\u{digits}")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)

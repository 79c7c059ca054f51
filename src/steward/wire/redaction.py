"""Secrets are never shown: Spark's ``spark.redaction.regex`` rule, for display only.

The rule is Spark's own (``org.apache.spark.internal.config.SECRET_REDACTION_PATTERN``): a
setting whose NAME or value matches ``spark.redaction.regex`` (default :data:`DEFAULT_REGEX`,
Spark 4's) is shown as :data:`REPLACEMENT`; a job may set its own regex in its
``spark_conf``, as in Spark, and ``spark.redaction.string.regex`` (no default) redacts every
match inside free text. Steward applies the same rule to a job's environment variables
(``env``: a name or value that matches hides the value) and to its arguments:

- ``--password x``: an option whose name matches hides the argument after it;
- ``--api-token=x`` and ``db.password=x``: a ``name=value`` whose name matches hides the value;

and to free text it shows (error messages and tracebacks of attempts, reasons, log lines):
every secret value of the job's own settings, environment and arguments
(:attr:`Redactor.secrets`, those of at least :data:`MIN_SECRET_LENGTH` characters),
``name=value`` / ``name: value`` pairs whose name matches, and the password of
``scheme://user:password@host`` URLs.

Redaction is for display: the job itself always gets the real values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from steward.errors import JobRejectedError
from steward.wire.records import AttemptRecord, ErrorInfo

REDACTION_REGEX_KEY = "spark.redaction.regex"
STRING_REDACTION_REGEX_KEY = "spark.redaction.string.regex"
DEFAULT_REGEX = r"(?i)secret|password|token|access[.]?key|credential"
"""Spark 4's default ``spark.redaction.regex`` (spark-core's ``SECRET_REDACTION_PATTERN``)."""
REPLACEMENT = "*********(redacted)"
"""Spark's ``Utils.REDACTION_REPLACEMENT_TEXT``."""
MIN_SECRET_LENGTH = 4
"""A secret value shorter than this is not searched for in free text (it would hide every
"1" or "on" of a message); it is still hidden wherever it is shown as a setting."""

_KEY_SEP = re.compile(r"""(?P<key>["']?[\w.\-]+["']?)(?P<sep>\s*[=:]\s*)""")
_VALUE = re.compile(r""""[^"]*"|'[^']*'|[^\s,;&"'}\]]+""")
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][\w+.\-]*://[^\s:/@]+:)(?P<password>[^\s/@]+)@")


class RedactionRegexError(JobRejectedError):
    """A job's ``spark.redaction.regex`` or ``spark.redaction.string.regex`` does not compile."""


@lru_cache(maxsize=64)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def check_conf(spark_conf: Mapping[str, str]) -> None:
    """Raise :class:`RedactionRegexError` if the job's redaction regexes do not compile."""
    for key in (REDACTION_REGEX_KEY, STRING_REDACTION_REGEX_KEY):
        pattern = spark_conf.get(key)
        if pattern is None:
            continue
        try:
            _compile(pattern)
        except re.error as exc:
            raise RedactionRegexError(
                f"spark_conf {key} is not a valid regular expression ({exc}); Steward reads it"
                " with Python's re module"
            ) from None


class Redactor:
    """One job's rule: its regex, its optional string regex and its secret values."""

    def __init__(
        self,
        regex: str = DEFAULT_REGEX,
        string_regex: str | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        try:
            self._regex = _compile(regex)
        except re.error:
            self._regex = _compile(DEFAULT_REGEX)  # refused at submission; never fail open
        self._string_regex: re.Pattern[str] | None = None
        if string_regex:
            try:
                self._string_regex = _compile(string_regex)
            except re.error:
                self._string_regex = None
        found = {s for s in secrets if len(s) >= MIN_SECRET_LENGTH and s != REPLACEMENT}
        # Longest first: a secret that contains another is replaced whole.
        self.secrets: tuple[str, ...] = tuple(sorted(found, key=len, reverse=True))

    @classmethod
    def for_job(
        cls,
        spark_conf: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> Redactor:
        """The rule of a job with these settings, arguments and environment variables
        (defaults: Spark's rule)."""
        conf = spark_conf or {}
        plain = cls(conf.get(REDACTION_REGEX_KEY, DEFAULT_REGEX))
        secrets = []
        for values in (conf, env or {}):
            shown = plain.conf(values)
            secrets += [value for key, value in values.items() if shown[key] != value]
        secrets += plain._hidden_arguments(args)
        return cls(
            conf.get(REDACTION_REGEX_KEY, DEFAULT_REGEX),
            conf.get(STRING_REDACTION_REGEX_KEY),
            secrets,
        )

    def is_secret(self, name: str) -> bool:
        """True if a setting or option called ``name`` holds a secret."""
        return self._regex.search(name) is not None

    def conf(self, spark_conf: Mapping[str, str]) -> dict[str, str]:
        """Settings as shown: Spark's rule, a value whose key or value matches is replaced."""
        return {
            key: REPLACEMENT if self.is_secret(key) or self.is_secret(value) else value
            for key, value in spark_conf.items()
        }

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment variables as shown: the rule of settings (a name or value that
        matches hides the value)."""
        return self.conf(env)

    def args(self, args: Sequence[str]) -> list[str]:
        """Arguments as shown (see the module docstring)."""
        hidden = self._hidden(args)
        shown = []
        for index, arg in enumerate(args):
            if index not in hidden:
                shown.append(self.text(arg))
            elif hidden[index]:
                shown.append(REPLACEMENT)  # the value of a secret option
            else:
                shown.append(f"{arg.partition('=')[0]}={REPLACEMENT}")
        return shown

    def _hidden(self, args: Sequence[str]) -> dict[int, bool]:
        """Index of each argument that is or holds a secret value: True for an option's
        value (``--password x``), False for a ``name=value``."""
        hidden: dict[int, bool] = {}
        after_option = False
        for index, arg in enumerate(args):
            if after_option:
                hidden[index] = True
                after_option = False
                continue
            name, equals, _value = arg.partition("=")
            if equals and self.is_secret(name):
                hidden[index] = False
            elif not equals and arg.startswith("-") and self.is_secret(arg):
                after_option = True
        return hidden

    def _hidden_arguments(self, args: Sequence[str]) -> list[str]:
        """The secret values among ``args`` (an option's value, a ``name=value``'s value)."""
        return [
            args[index] if whole else args[index].partition("=")[2]
            for index, whole in self._hidden(args).items()
        ]

    def text(self, text: str) -> str:
        """Free text as shown: the job's secrets, secret-looking pairs and URL passwords."""
        for secret in self.secrets:
            text = text.replace(secret, REPLACEMENT)
        text = self._pairs(text)
        text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{REPLACEMENT}@", text)
        if self._string_regex is not None:
            text = self._string_regex.sub(REPLACEMENT, text)
        return text

    def _pairs(self, text: str) -> str:
        """``name=value`` and ``name: value`` pairs with a secret name, their values hidden."""
        parts: list[str] = []
        done = 0
        for pair in _KEY_SEP.finditer(text):
            if pair.start() < done or not self.is_secret(pair["key"]):
                continue
            value = _VALUE.match(text, pair.end())
            if value is None or value[0].strip("\"'") == REPLACEMENT:
                continue
            quote = value[0][0] if value[0][0] in ("'", '"') else ""
            parts += [text[done : pair.end()], quote, REPLACEMENT, quote]
            done = value.end()
        parts.append(text[done:])
        return "".join(parts)


DEFAULT = Redactor()
"""Spark's default rule, for text that belongs to no job in particular."""


def redact_error(error: ErrorInfo, rule: Redactor = DEFAULT) -> ErrorInfo:
    """``error`` with its message and traceback as :meth:`Redactor.text` shows them."""
    message = rule.text(error.message)
    traceback = None if error.traceback is None else rule.text(error.traceback)
    if message == error.message and traceback == error.traceback:
        return error
    return error.model_copy(update={"message": message, "traceback": traceback})


def redact_attempts(
    attempts: Sequence[AttemptRecord], rule: Redactor = DEFAULT
) -> list[AttemptRecord]:
    """Attempts with their causes redacted."""
    return [
        attempt
        if attempt.cause is None
        else attempt.model_copy(update={"cause": redact_error(attempt.cause, rule)})
        for attempt in attempts
    ]

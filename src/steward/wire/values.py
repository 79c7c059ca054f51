"""The base of every wire model: strict, frozen values and versioned payloads; job ids.

Every payload carries ``"schema": 1``. Decoding is strict: a wrong type, a missing field or a
schema newer than :data:`SCHEMA_VERSION` is a :class:`CorruptStateError`
(:class:`UnsupportedSchemaError` for the last), never a half-read object. No pickle anywhere.

Unknown fields: what a person sends (a request body, a job spec) is refused with them (a typo
must not pass silently); what another Steward process wrote (a record in ZooKeeper, a
heartbeat and its reply: :meth:`Payload.from_json`) is read without them. Within one schema a
release only adds optional fields, so an older process reads a newer one's records and
messages, and a cluster can be upgraded one process at a time (docs/operations.md,
"Upgrading Steward"); a change an older release must not misread bumps the schema.
"""

from __future__ import annotations

import json
import re
import secrets
from typing import Any, ClassVar, Self, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
)

from steward.errors import CorruptStateError, UnsupportedSchemaError

SCHEMA_VERSION = 1


JOB_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}"


_JOB_ID = re.compile(JOB_ID_PATTERN)


JsonValue: TypeAlias = Any


"""A JSON-serialisable value (the result value of a pipeline)."""


def check_job_id(job_id: str) -> str:
    """Return ``job_id`` if it is a valid id; ids become znode and file names."""
    if not _JOB_ID.fullmatch(job_id):
        raise ValueError(
            f"invalid job id {job_id!r}: use 1-128 letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    return job_id


MAX_ID_STEM = 100
"""Characters of a new id's stem at most (an id holds 128)."""
_NOT_IN_IDS = re.compile(r"[^A-Za-z0-9_.\-]+")


def new_job_id(stem: str = "job") -> str:
    """A fresh id ``<stem>-<12 hex digits>``, whoever makes it (the client for a submit it may
    retry, the leader for a raw request that named none): ``stem``, a pipeline's name, cut to
    what an id may hold; 48 random bits, so two ids of one stem do not meet by chance."""
    cleaned = _NOT_IN_IDS.sub("-", stem).strip("-._")[:MAX_ID_STEM] or "job"
    return check_job_id(f"{cleaned}-{secrets.token_hex(6)}")


_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


STORED = {"stored": True}
"""The validation context of a payload read back from storage (:meth:`Payload.from_json`)."""


def check_text(value: str, what: str, info: ValidationInfo | None = None) -> str:
    """``value`` if it holds no control character; names, labels and ids are shown on
    terminals, where escape sequences and bidi overrides would rewrite what a person sees.

    Checked on what comes in, not on what is read back from storage (``info``'s context is
    :data:`STORED`): a job stored before this check existed must load, or it would be lost
    as corrupt; whatever shows it escapes it anyway."""
    if info is not None and info.context == STORED:
        return value
    if found := _UNPRINTABLE.search(value):
        raise ValueError(
            f"{what} contains the control character {found[0]!r} at position {found.start()}"
        )
    return value


class Value(BaseModel):
    """Base of every model: strict, frozen; unknown fields are errors except in what another
    Steward process wrote (see the module docstring)."""

    # Not defer_build (each model built on first use, ~0.2 s less CPU a JobManager start):
    # FastAPI first uses a route's model inside a field aliased by the parameter's name, and
    # pydantic then builds a deferred model there again and warns that the alias does nothing.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


_SCHEMA_HEAD = b'{"schema":%d,' % SCHEMA_VERSION
_SCHEMA_ONLY = b'{"schema":%d}' % SCHEMA_VERSION


class Payload(Value):
    """Base of every stored top-level payload: a :class:`Value` with a schema version."""

    kind_name: ClassVar[str] = "payload"
    compact: ClassVar[bool] = False
    """Written without the fields that hold their default (None, "", 0, [], {}, false): for
    the records kept per live job in ZooKeeper, whose bytes count (issue 22). Reading back
    gives the same value, for this release and an older one: a missing field is its default,
    and a release never changes a field's default within a schema."""
    schema_version: int = Field(default=SCHEMA_VERSION, alias="schema")

    def to_json(self) -> bytes:
        # The serializer's bytes as they are (model_dump_json decodes them to a str).
        serializer = self.__pydantic_serializer__
        if not self.compact or self.schema_version != SCHEMA_VERSION:
            return serializer.to_json(self, by_alias=True)
        # exclude_defaults leaves the schema out (it is its default); from_json refuses a
        # payload without one, so it is written first, as a constant.
        rest = serializer.to_json(self, by_alias=True, exclude_defaults=True)
        return _SCHEMA_ONLY if rest == b"{}" else _SCHEMA_HEAD + rest[1:]

    @classmethod
    def from_json(cls, data: bytes | str) -> Self:
        """Decode ``data``; anything but a valid payload of a known schema raises."""
        try:
            # Strict: a stored payload must have exactly the right JSON types ("1" is not 1,
            # false is not 0); a payload that only fits after coercion is corrupt. Newer
            # fields are ignored at every depth by pydantic's core (a Python validator per
            # nested value was half of a heartbeat's decoding), and the body is parsed once:
            # only a payload that does not validate is read again to say what is wrong.
            payload = cls.model_validate_json(data, strict=True, extra="ignore", context=STORED)
        except ValidationError as exc:
            _check_schema(cls.kind_name, _schema_of(cls.kind_name, data))
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "payload"
            raise CorruptStateError(f"{cls.kind_name}: {where}: {first['msg']}") from exc
        given = "schema_version" in payload.model_fields_set
        _check_schema(cls.kind_name, payload.schema_version if given else None)
        return payload


def _schema_of(kind_name: str, data: bytes | str) -> object:
    """The ``schema`` of a JSON object that did not validate: its JSON read on its own."""
    try:
        raw = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # nested too deep
        raise CorruptStateError(f"{kind_name}: not valid JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise CorruptStateError(f"{kind_name}: expected a JSON object")
    return raw.get("schema")


def _check_schema(kind_name: str, schema: object) -> None:
    if isinstance(schema, bool) or not isinstance(schema, int):
        raise CorruptStateError(f"{kind_name}: missing or invalid schema {schema!r}")
    if schema > SCHEMA_VERSION:
        raise UnsupportedSchemaError(
            f"{kind_name}: schema {schema} was written by a newer Steward"
            f" (this version reads schema {SCHEMA_VERSION})"
        )
    if schema != SCHEMA_VERSION:
        raise CorruptStateError(f"{kind_name}: missing or invalid schema {schema!r}")

"""The two encodings of the records kept per live job: a status record and a graph pointer.

Schema 1 is every other payload's form (:meth:`Payload.to_json`). Schema 2 (issue 22: under
600 B of ZooKeeper per running job) writes the same values with short keys, without the
status record's ``job_id`` (its path says it) and with the pointer's hashes in base64url
(43 characters instead of 64). A leader writes the format of ``high-availability.record-format``;
every reader of this release reads both, always (:func:`decode_status`, :func:`decode_pointer`),
and the classes in memory are the same whichever was read. A release that reads only schema 1
refuses a schema-2 record ("schema 2 was written by a newer Steward"), so format 2 is turned on
once every process reads it (docs/operations.md, "Record format").

Decoding stays strict: a wrong type, a missing field or an unknown schema is a
:class:`CorruptStateError` naming the field by its long name; newer optional fields are ignored,
as in schema 1.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any, Final, TypeVar

import pydantic_core
from pydantic import ValidationError
from pydantic_core import SchemaValidator, core_schema

from steward.errors import CorruptStateError, UnsupportedSchemaError
from steward.wire.jobs import JobGraphPointer
from steward.wire.records import AttemptRecord, JobStatusRecord
from steward.wire.short_keys import (
    ShortForm,
    constant_after,
    context_of,
    from_context,
    short_validator,
)
from steward.wire.values import SCHEMA_VERSION, STORED, Payload

RECORD_FORMATS: Final = (1, 2)
"""The record formats a leader may write; this release reads every one."""

DEFAULT_RECORD_FORMAT: Final = 2
"""What a store writes when not told (``high-availability.record-format``'s default)."""

STATUS_KEYS: Final[Mapping[str, str]] = {
    "name": "n",
    "state": "s",
    "reason": "r",
    "submitted_at": "t",
    "updated_at": "u",
    "attempts": "a",
    "attempt_count": "c",
    "failures": "f",
    "restart_at": "ra",
    "epoch": "e",
    "submitter": "by",
    "team": "tm",
    "queue": "q",
    "priority": "p",
    "proxy_user": "pu",
    "labels": "l",
    "timeout": "to",
    "timed_out": "tx",
    "env": "v",
    "slots": "sl",
    "max_concurrent": "mc",
    "hookless": "h",
}
"""Schema 2's key of each :class:`JobStatusRecord` field (``job_id`` is the path's)."""

STATUS_IMPLIED: Final[Mapping[str, object]] = {
    "team": "default",
    "queue": "default",
    "priority": 0,
    "slots": 1,
    "hookless": True,
}
"""What schema 2 reads for these fields when the record leaves them out: what nearly every
job holds (the default team and queue, one slot, no ``initialize`` hook), where schema 1
reads ``None`` ("recorded before it was kept"); a schema-2 record holding ``None`` says
``null``. An encoding, not a
setting: the values a cluster is configured with do not change what a record means."""

ATTEMPT_KEYS: Final[Mapping[str, str]] = {
    "number": "n",
    "taskmanager": "tm",
    "epoch": "e",
    "state": "s",
    "started_at": "t",
    "ended_at": "te",
    "cause": "c",
    "adopted_by": "ab",
    "spark_app": "sp",
}
"""Schema 2's key of each :class:`AttemptRecord` field (its cause and Spark app keep theirs:
rare, and what a person reads in ``zkCli.sh get``)."""

GRAPH_BLOB_PREFIX: Final = "jobgraphs"
"""A job graph blob's key is ``jobgraphs/<job-id>/<unique>``: schema 2 writes only the last
part of such a key (the pointer's path names the job), any other key whole."""

POINTER_KEYS: Final[Mapping[str, str]] = {
    "blob": "b",
    "sha256": "h",
    "epoch": "e",
    "submission_sha256": "s",
}
"""Schema 2's key of each :class:`JobGraphPointer` field; its hashes are base64url, its blob
key without the job's prefix (:data:`GRAPH_BLOB_PREFIX`)."""

_HEAD: Final = b'{"schema":2,'
_B64_SHA256: Final = r"^[A-Za-z0-9_-]{42}[AEIMQUYcgkosw048]$"
"""A sha256 in base64url without padding: 43 characters, the last holding 2 bits."""

P = TypeVar("P", bound=Payload)


# ---------------------------------------------------------------------------- encoding


def encode_status(record: JobStatusRecord, record_format: int) -> bytes:
    """``record`` as the leader writes it at ``record_format``."""
    if record_format == 1:
        return record.to_json()
    body = record.model_dump(mode="json", exclude_defaults=True)
    for field, implied in STATUS_IMPLIED.items():
        value = getattr(record, field)
        if value == implied:
            body.pop(field, None)
        else:
            body[field] = value  # None too: schema 2 would read it as the implied value
    short: dict[str, Any] = {"schema": 2}
    body.pop("job_id")
    if "attempts" in body:
        body["attempts"] = [_renamed(attempt, ATTEMPT_KEYS) for attempt in body["attempts"]]
    short.update(_renamed(body, STATUS_KEYS))
    return _dumps(short)


def encode_pointer(pointer: JobGraphPointer, record_format: int, job_id: str) -> bytes:
    """``pointer``, of ``job_id``'s graph, as the leader writes it at ``record_format``."""
    if record_format == 1:
        return pointer.to_json()
    body = pointer.model_dump(mode="json", exclude_defaults=True)
    body["blob"] = _short_blob(body["blob"], job_id)
    for field in ("sha256", "submission_sha256"):
        if field in body:
            body[field] = _b64(body[field])
    return _dumps({"schema": 2, **_renamed(body, POINTER_KEYS)})


def _renamed(body: dict[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
    return {keys[field]: value for field, value in body.items()}


def _dumps(body: dict[str, Any]) -> bytes:
    # pydantic-core's serializer: compact UTF-8, in a fifth of json.dumps's time.
    return pydantic_core.to_json(body)


def _own_prefix(job_id: str) -> str:
    return f"{GRAPH_BLOB_PREFIX}/{job_id}/"


def _short_blob(key: str, job_id: str) -> str:
    """The job's own key as its last part (no "/"); another key whole, behind "./" when it
    would otherwise read as one of those (no "/") or starts with "./" itself."""
    own = _own_prefix(job_id)
    if key.startswith(own) and "/" not in key[len(own) :]:
        return key[len(own) :]
    return f"./{key}" if "/" not in key or key.startswith("./") else key


def _long_blob(key: str, job_id: str) -> str:
    if "/" not in key:
        return _own_prefix(job_id) + key
    return key[2:] if key.startswith("./") else key


def _b64(hex_digest: str) -> str:
    return base64.urlsafe_b64encode(bytes.fromhex(hex_digest)).rstrip(b"=").decode()


def _hex(b64_digest: str) -> str:
    return base64.urlsafe_b64decode(b64_digest + "=").hex()


# ---------------------------------------------------------------------------- decoding


def decode_status(data: bytes | str, job_id: str) -> JobStatusRecord:
    """The status record of ``job_id`` in ``data``, of either schema; CorruptStateError
    (UnsupportedSchemaError for a newer schema) if it is not one."""
    return _decoded(data, job_id, JobStatusRecord, _STATUS_2)


def decode_pointer(data: bytes | str, job_id: str) -> JobGraphPointer:
    """The pointer to ``job_id``'s graph in ``data``, of either schema (errors as
    :func:`decode_status`)."""
    return _decoded(data, job_id, JobGraphPointer, _POINTER_2)


def _decoded(data: bytes | str, job_id: str, kind: type[P], schema_2: SchemaValidator) -> P:
    """``data`` as ``kind``: schema 1 by its own decoder, schema 2 by ``schema_2`` (a
    validator of its short form that yields a ``kind`` of ``job_id``)."""
    if not _is_schema_2(data):
        try:
            return kind.from_json(data)
        except UnsupportedSchemaError:
            data = _as_schema_2(kind.kind_name, data)
    try:
        found: P = schema_2.validate_json(
            data, strict=True, extra="ignore", context={**STORED, "job_id": job_id}
        )
    except ValidationError as exc:
        raise _corrupt(kind.kind_name, exc) from exc
    return found


def _is_schema_2(data: bytes | str) -> bool:
    """As this release writes schema 2 (the head is checked whole by the decoder anyway)."""
    head = data[: len(_HEAD)]
    return head == _HEAD if isinstance(head, bytes) else head == _HEAD.decode()


def _as_schema_2(kind_name: str, data: bytes | str) -> bytes:
    """``data``, a payload of a schema above 1 (schema 1's decoder said so), as this release
    writes schema 2 (a person may have written it with spaces); a newer schema is refused."""
    body = json.loads(data)
    schema = body.pop("schema")
    if schema != 2:
        raise UnsupportedSchemaError(
            f"{kind_name}: schema {schema} was written by a newer Steward"
            f" (this version reads schemas {', '.join(map(str, RECORD_FORMATS))})"
        )
    return _dumps({"schema": 2, **body})


def _corrupt(kind_name: str, exc: ValidationError) -> CorruptStateError:
    """What is wrong with a schema-2 record, by its field's long name."""
    error = exc.errors()[0]
    if error["type"] == "json_invalid":
        return CorruptStateError(f"{kind_name}: payload: not JSON: {error['msg']}")
    if error["loc"][:1] == ("schema_version",):
        return CorruptStateError(f"{kind_name}: missing or invalid schema")
    where = ".".join(map(str, error["loc"])) or "payload"
    return CorruptStateError(f"{kind_name}: {where}: {error['msg']}")


def _from_path(value: str, info: core_schema.ValidationInfo) -> str:
    """A pointer's blob key as schema 2 writes it, whole again (the context's job id)."""
    job_id: str = context_of(info)["job_id"]
    return _long_blob(value, job_id)


def _b64_sha256() -> core_schema.CoreSchema:
    """A sha256 as schema 2 writes it (base64url), read as its hex digest."""
    return core_schema.no_info_after_validator_function(
        _hex, core_schema.str_schema(pattern=_B64_SHA256)
    )


_SCHEMA_2: Final = constant_after(core_schema.literal_schema([2]), SCHEMA_VERSION)
"""What a schema-2 record says its schema is; in memory, it is schema 1's record."""

_STATUS_2: Final = short_validator(
    JobStatusRecord,
    {
        JobStatusRecord: ShortForm(
            {**STATUS_KEYS, "schema_version": "schema"},
            defaults=STATUS_IMPLIED,
            computed={"job_id": from_context("job_id"), "schema_version": _SCHEMA_2},
        ),
        AttemptRecord: ShortForm(ATTEMPT_KEYS),
    },
)
"""Schema 2's status record read straight into a :class:`JobStatusRecord`: one strict
validation, no renaming in Python (a takeover decodes every live job's record; renaming, then
dumping and validating the long form cost 31 to 46 µs a record, ``benchmarks/record_decode.py``).
Its job id is the path's (the validation context's), its schema in memory schema 1's."""

_POINTER_2: Final = short_validator(
    JobGraphPointer,
    {
        JobGraphPointer: ShortForm(
            {**POINTER_KEYS, "schema_version": "schema"},
            computed={
                "schema_version": _SCHEMA_2,
                "blob": core_schema.with_info_after_validator_function(
                    _from_path, core_schema.str_schema()
                ),
                "sha256": _b64_sha256(),
                "submission_sha256": core_schema.with_default_schema(
                    core_schema.nullable_schema(_b64_sha256()), default=None
                ),
            },
        )
    },
)
"""Schema 2's graph pointer read straight into a :class:`JobGraphPointer` (its hashes made
hex, its blob key whole), as :data:`_STATUS_2`."""

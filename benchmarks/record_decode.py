"""The cost of a job's status record at a takeover, as written before and now (issue 22).

A new leader reads every live job's status record (``jobs/<job-id>/status``) and decodes it
(:meth:`Payload.from_json`: pydantic's strict validation, which refuses a corrupt record with a
clear error), and writes each adopted one back with ``adopted_by``. This measures, in this
process, one record of a running job as a takeover finds it (one running attempt, adopted once
already, the fields a submission sets), per record:

- ``before``: the record as the previous release wrote it (every field, nulls and empty
  values included: ``model_dump_json(by_alias=True)``, byte for byte its ``to_json``);
- ``after``: the same record as this release writes it (:attr:`Payload.compact`: no field
  that holds its default), decoded by the same strict ``from_json``.

Both decode to the same record (checked: the run fails otherwise), and a corrupt record is
still refused (checked: a wrong type, a missing field). ``json_loads_us`` is the standard
library's ``json.loads`` of the compact record alone, no validation: the floor of any decoder
that builds Python objects through it (pydantic's own parser is in Rust, and lands about there).
``encode``: the record written back (a takeover rewrites every adopted one), before
(``model_dump_json(...).encode()``) and now (``to_json``: the serializer's bytes, defaults
out). ``format_2``: the same record at ``high-availability.record-format`` 2 (short keys, no
job id: :mod:`steward.wire.record_format`), decoded and encoded the same way; ``pointer``: the
job's graph pointer (``jobgraphs/<job-id>``, read beside it at a takeover) decoded at format 1
and at format 2 (base64url hashes, the blob key without the job's prefix). Figures are
medians of batches of the CPU time of this thread (the machine's other load left out), the
forms interleaved batch by batch so that a busy moment weighs on all;
``ratio`` is after / before (lower is better). No ZooKeeper: decoding is what is measured,
not the reads.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

from _common import Json, parser, process_document, progress, run_main, summary_row
from steward.errors import CorruptStateError
from steward.testing.records import TAKEOVER_RECORD
from steward.wire.jobs import JobGraphPointer
from steward.wire.record_format import decode_pointer, decode_status, encode_pointer, encode_status
from steward.wire.records import JobStatusRecord

RECORD = TAKEOVER_RECORD
POINTER = JobGraphPointer(
    blob=f"jobgraphs/{RECORD.job_id}/187c0e1f2a3b4c5d-0123456789ab",
    sha256="ab" * 32,
    epoch=2,
    submission_sha256="cd" * 32,
)
GOAL = 1.0
"""The compact record must decode in less time than the full one (ratio below 1)."""


def per_call_us(call: Callable[[], object], calls: int) -> float:
    """CPU time of this thread per call of ``call`` over ``calls`` calls, in microseconds."""
    started = time.thread_time_ns()
    for _ in range(calls):
        call()
    return (time.thread_time_ns() - started) / calls / 1000.0


def measure(batches: int, calls: int) -> Json:
    before_bytes = RECORD.model_dump_json(by_alias=True).encode()
    after_bytes = RECORD.to_json()
    if JobStatusRecord.from_json(before_bytes) != RECORD:
        raise SystemExit("the record as written before does not read back equal")
    if JobStatusRecord.from_json(after_bytes) != RECORD:
        raise SystemExit("the compact record does not read back equal")
    _check_refusals(after_bytes)
    format_2 = encode_status(RECORD, 2)
    if decode_status(format_2, RECORD.job_id) != RECORD:
        raise SystemExit("the record at format 2 does not read back equal")
    pointers = {form: encode_pointer(POINTER, form, RECORD.job_id) for form in (1, 2)}
    if any(decode_pointer(data, RECORD.job_id) != POINTER for data in pointers.values()):
        raise SystemExit("the pointer does not read back equal")
    pointer: dict[int, list[float]] = {1: [], 2: []}
    timings: dict[str, list[float]] = {key: [] for key in ("decode", "encode", "json_loads")}
    before: dict[str, list[float]] = {key: [] for key in ("decode", "encode")}
    short: dict[str, list[float]] = {key: [] for key in ("decode", "encode")}
    for _ in range(batches):
        short["decode"].append(per_call_us(lambda: decode_status(format_2, RECORD.job_id), calls))
        short["encode"].append(per_call_us(lambda: encode_status(RECORD, 2), calls))
        before["decode"].append(per_call_us(lambda: JobStatusRecord.from_json(before_bytes), calls))
        timings["decode"].append(per_call_us(lambda: JobStatusRecord.from_json(after_bytes), calls))
        before["encode"].append(
            per_call_us(lambda: RECORD.model_dump_json(by_alias=True).encode(), calls)
        )
        timings["encode"].append(per_call_us(RECORD.to_json, calls))
        timings["json_loads"].append(per_call_us(lambda: json.loads(after_bytes), calls))
        for form, data in pointers.items():
            pointer[form].append(per_call_us(partial(decode_pointer, data, RECORD.job_id), calls))
    floor = statistics.median(timings.pop("json_loads"))
    return {
        "bytes_before": len(before_bytes),
        "bytes_after": len(after_bytes),
        **{f"{key}_before_us": round(statistics.median(v), 2) for key, v in before.items()},
        **{f"{key}_after_us": round(statistics.median(v), 2) for key, v in timings.items()},
        "json_loads_us": round(floor, 2),
        "bytes_format_2": len(format_2),
        **{f"{key}_format_2_us": round(statistics.median(v), 2) for key, v in short.items()},
        **{
            f"pointer_decode_format_{k}_us": round(statistics.median(v), 2)
            for k, v in pointer.items()
        },
    }


def _check_refusals(good: bytes) -> None:
    """A compact record is still checked whole: a wrong type or a missing field is refused."""
    for bad in (
        good.replace(b'"epoch":2', b'"epoch":"2"'),
        good.replace(b'"state":"RUNNING",', b"", 1),
    ):
        try:
            JobStatusRecord.from_json(bad)
        except CorruptStateError:
            continue
        raise SystemExit(f"a corrupt record was read: {bad!r}")


def rows(results: Json) -> list[Json]:
    return [
        summary_row(
            "status record decode (strict), compact against every field",
            results["decode_after_us"],
            "us CPU",
            goal=f"ratio < {GOAL}",
            met=results["decode_ratio"] < GOAL,
            note=f"{results['bytes_after']} B against {results['bytes_before']} B; "
            f"before {results['decode_before_us']} us, ratio {results['decode_ratio']}; "
            f"json.loads alone {results['json_loads_us']} us",
            digits=2,
        ),
        _timing(
            "status record encode, compact against every field",
            results["encode_after_us"],
            f"before {results['encode_before_us']} us, ratio {results['encode_ratio']}",
        ),
        _timing(
            "status record decode (strict), record format 2",
            results["decode_format_2_us"],
            f"{results['bytes_format_2']} B (short keys, no job id); schema 1 compact "
            f"{results['decode_after_us']} us; encode {results['encode_format_2_us']} us",
        ),
        _timing(
            "graph pointer decode (strict), record format 2",
            results["pointer_decode_format_2_us"],
            f"format 1 {results['pointer_decode_format_1_us']} us",
        ),
    ]


def _timing(figure: str, value: float, note: str) -> Json:
    """A row of a time without a goal, in microseconds of CPU."""
    return summary_row(figure, value, "us CPU", goal="", met=None, note=note, digits=2)


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--batches", type=int, default=None, help="interleaved batches (31)")
    cli.add_argument("--calls", type=int, default=None, help="calls per batch (2000)")
    args = cli.parse_args()
    batches = args.batches or (5 if args.quick else 31)
    calls = args.calls or (200 if args.quick else 2000)

    def body() -> Json:
        results = measure(batches, calls)
        for key in ("decode", "encode"):
            results[f"{key}_ratio"] = round(
                results[f"{key}_after_us"] / results[f"{key}_before_us"], 3
            )
        progress(f"record decode: {results}")
        parameters = {"batches": batches, "calls": calls, "quick": args.quick}
        return process_document("record_decode", parameters, results, rows(results))

    return run_main(body, args.verbose)


if __name__ == "__main__":
    sys.exit(main())

"""A pipeline whose code fails: it rejects its input with a clear error. No Spark.

    steward submit examples/failing.py --restart none

Every attempt raises :class:`ReportValidationError`, so the job goes through its restart
strategy and ends FAILED, with the exception's type, message and traceback as the cause.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from steward import JobContext

ROWS = [
    {"account": "A-100", "amount": 120},
    {"account": "A-101", "amount": -15},
    {"account": "A-102", "amount": 310},
    {"account": "A-103", "amount": -2},
]


class ReportValidationError(ValueError):
    """The input of the daily report is not publishable."""


def validate(rows: list[dict[str, object]]) -> None:
    negative = [str(row["account"]) for row in rows if int(str(row["amount"])) < 0]
    if negative:
        raise ReportValidationError(
            f"{len(negative)} of {len(rows)} rows have a negative amount"
            f" (accounts {', '.join(negative)}): refusing to publish the daily report"
        )


def main(ctx: JobContext) -> None:
    ctx.report_progress(phase="validating", rows=len(ROWS))
    validate(ROWS)

"""Batch word count of a text file into an output folder.

    steward submit examples/wordcount.py -- INPUT OUTPUT

INPUT is a text file (or folder of them), OUTPUT a folder that must not exist yet; give both
as absolute paths or URLs, since the pipeline runs in an attempt's work directory on some
TaskManager. A word is a maximal run of the letters a-z after lower-casing: everything else
(digits, apostrophes, punctuation, accented letters) separates words.

OUTPUT receives one CSV file (``word,count``, most frequent first). The job's result value
is ``{"words": <total words>, "distinct": <distinct words>}``.

- ``initialize`` refuses an existing OUTPUT. Steward runs it before the first attempt and
  again when a new leader recovers the job, in a child process: if the output appeared in
  the meantime, this job fails and nothing else does (seed 000's case).
- The tokenised text is a stage (``ctx.stage("words", ...)``): an attempt restarted after a
  crash reads it back instead of reading and splitting the input again.
- The counts are written next to OUTPUT and renamed into place at the end, so OUTPUT either
  does not exist or holds the complete result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import fsspec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from steward import JobContext

# Java's regex (Spark) and Python's agree on this one: ASCII letters only.
SEPARATORS = "[^a-z]+"


def _paths(ctx: JobContext) -> tuple[str, str]:
    if len(ctx.args) != 2:
        raise ValueError(f"usage: wordcount.py INPUT OUTPUT (got arguments {ctx.args})")
    source, output = ctx.args
    return source, output.rstrip("/")


def _refuse_existing(output: str) -> None:
    fs, path = fsspec.core.url_to_fs(output)
    if fs.exists(path):
        raise FileExistsError(
            f"output folder {output} already exists: refusing to overwrite an earlier result"
            " (remove it or choose another OUTPUT)"
        )


def initialize(ctx: JobContext) -> None:
    _, output = _paths(ctx)
    _refuse_existing(output)


def main(ctx: JobContext) -> dict[str, int]:
    from pyspark.sql import functions as sf

    source, output = _paths(ctx)
    _refuse_existing(output)
    spark = ctx.spark

    def tokenise() -> DataFrame:
        lines = spark.read.text(source)
        words = sf.explode(sf.split(sf.lower(sf.col("value")), SEPARATORS)).alias("word")
        return lines.select(words).where(sf.col("word") != "")

    words = ctx.stage("words", tokenise)
    ctx.report_progress(phase="counting")
    counts = words.groupBy("word").count().cache()
    totals = counts.agg(sf.sum("count").alias("words"), sf.count("*").alias("distinct")).first()

    ctx.report_progress(phase="writing", output=output)
    fs, output_path = fsspec.core.url_to_fs(output)
    # Left by earlier attempts that died while writing; only one attempt runs at a time.
    for leftover in fs.glob(f"{output_path}.attempt-*.tmp"):
        fs.rm(leftover, recursive=True)
    staging = f"{output}.attempt-{ctx.attempt}.tmp"
    ordered = counts.orderBy(sf.desc("count"), sf.asc("word")).coalesce(1)
    ordered.write.csv(staging, header=True)
    fs.mv(f"{output_path}.attempt-{ctx.attempt}.tmp", output_path, recursive=True)

    words_total = int(totals["words"] or 0) if totals else 0
    distinct = int(totals["distinct"]) if totals else 0
    return {"words": words_total, "distinct": distinct}

"""Structured Streaming word count over a folder of text files.

    steward submit examples/streaming_wordcount.py -- INPUT_DIR OUTPUT_DIR [--until-done]

Every text file that lands in INPUT_DIR is read once, one file per micro-batch
(``maxFilesPerTrigger=1``), split into words like ``wordcount.py`` does, and added to running
counts. After every micro-batch the complete counts are written to OUTPUT_DIR as JSON lines
(``{"word": ..., "count": ...}``), replacing the previous snapshot.

Exactly-once across restarts: the running counts and the list of files already read live in
Spark's checkpoint at ``ctx.streaming_checkpoint_location("wordcount")``, under the job's
checkpoint dir, which every attempt of the job shares. A restarted attempt resumes from the
last committed micro-batch; a micro-batch that was cut short is run again with the same files
and rewrites the same snapshot, so no count is lost or doubled. Steward reports each
completed micro-batch as a checkpoint of the job.

Without ``--until-done`` the job runs until cancelled, picking up new files as they arrive.
With it, the job stops once every file present in INPUT_DIR is counted and returns
``{"words": <total words>, "distinct": <distinct words>}`` (of the final counts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from steward import JobContext

SEPARATORS = "[^a-z]+"


def main(ctx: JobContext) -> dict[str, int] | None:
    from pyspark.sql import functions as sf

    args = ctx.args
    until_done = "--until-done" in args
    paths = [arg for arg in args if arg != "--until-done"]
    if len(paths) != 2:
        raise ValueError(
            f"usage: streaming_wordcount.py INPUT_DIR OUTPUT_DIR [--until-done] ({args})"
        )
    source, output = paths
    spark = ctx.spark

    lines = spark.readStream.option("maxFilesPerTrigger", 1).text(source)
    words = lines.select(
        sf.explode(sf.split(sf.lower(sf.col("value")), SEPARATORS)).alias("word")
    ).where(sf.col("word") != "")
    counts = words.groupBy("word").count()

    def publish(snapshot: DataFrame, batch_id: int) -> None:
        # Complete mode: the snapshot is all counts so far, so writing it again after a
        # replay of the same batch gives the same output.
        snapshot.coalesce(1).write.mode("overwrite").json(output)
        ctx.report_progress(batch=batch_id)

    query = (
        counts.writeStream.queryName("wordcount")
        .outputMode("complete")
        .option("checkpointLocation", ctx.streaming_checkpoint_location("wordcount"))
        .foreachBatch(publish)
        .start()
    )
    if not until_done:
        query.awaitTermination()
        return None
    query.processAllAvailable()
    query.stop()
    final = spark.read.json(output)
    totals = final.agg(sf.sum("count").alias("words"), sf.count("*").alias("distinct")).first()
    return {
        "words": int(totals["words"] or 0) if totals else 0,
        "distinct": int(totals["distinct"]) if totals else 0,
    }

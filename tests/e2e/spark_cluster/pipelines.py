"""The pipelines of the Spark cluster tests, written into each test's folder."""

from __future__ import annotations

import textwrap
from pathlib import Path

ROWS = 1000
EXPECTED_SUM = ROWS * (ROWS - 1) // 2

SUM = textwrap.dedent(
    f"""
    def main(ctx):
        total = ctx.spark.range({ROWS}, numPartitions=2).selectExpr("sum(id) AS s").first()["s"]
        return {{"sum": total, "attempt": ctx.attempt}}
    """
)

# Attempt 1 keeps the cluster busy until its TaskManager dies: tiny jobs in a loop on a
# standalone master, one long query (a slow Python UDF) on Spark Connect. Later attempts sum.
# Each attempt writes its Connect session id (if any) to <folder>/session-<attempt>.
LONG = textwrap.dedent(
    f"""
    import os
    import time

    def _note_session(ctx, folder):
        session_id = getattr(ctx.spark, "session_id", None)
        if session_id:
            path = os.path.join(folder, f"session-{{ctx.attempt}}")
            with open(path + ".tmp", "w") as out:
                out.write(session_id)
            os.replace(path + ".tmp", path)

    def main(ctx):
        folder, mode = ctx.args
        _note_session(ctx, folder)
        if ctx.attempt == 1 and mode == "loop":
            while True:
                ctx.spark.range(100, numPartitions=1).count()
                time.sleep(0.2)
        if ctx.attempt == 1 and mode == "slow-query":
            from pyspark.sql.functions import udf

            @udf("long")
            def slow(x):
                time.sleep(1)
                return x

            ctx.spark.range(0, 600, 1, 2).select(slow("id").alias("x")).groupBy().sum("x").collect()
        total = ctx.spark.range({ROWS}, numPartitions=2).selectExpr("sum(id) AS s").first()["s"]
        return {{"sum": total, "attempt": ctx.attempt}}
    """
)

SCRIPT = textwrap.dedent(
    f"""
    import sys

    from pyspark.sql import SparkSession

    if __name__ == "__main__":
        out = sys.argv[1]
        spark = SparkSession.builder.appName("unmodified-script").getOrCreate()
        total = spark.range({ROWS}, numPartitions=2).selectExpr("sum(id) AS s").first()["s"]
        with open(out, "w") as handle:
            context = spark.sparkContext
            handle.write(f"{{total}} {{context.applicationId}} {{context.master}}")
        spark.stop()
    """
)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path

"""A Steward pipeline: counts a text's words with Spark once its gate file exists.

The gate lets a test act (kill an Airflow task) while the job is running; ``<gate>.started``
gets one line per attempt, so the test sees the job running and how many times it ran.
"""

import os
import time


def main(ctx):
    text, gate = ctx.args
    with open(gate + ".started", "a") as started:
        started.write(f"attempt {ctx.attempt}\n")
    while not os.path.exists(gate):
        time.sleep(0.1)
    lines = ctx.spark.read.text(text)
    words = lines.selectExpr("explode(split(lower(value), '[^a-z]+')) AS word").where("word != ''")
    count = words.count()
    print(f"counted {count} words", flush=True)
    return {"words": count}

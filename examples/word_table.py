"""The most frequent words as a table, drawn with a library the cluster does not have.

    steward submit --requirements examples/word_table-requirements.txt \
        examples/word_table.py INPUT [TOP]

``tabulate`` is not installed with Steward. ``--requirements`` names a pip requirements file:
the TaskManager builds a Python environment from it (once, then cached by its content) and
runs the attempt in it, so each job gets the libraries it asks for and no other job sees them.
With spark-submit you would install ``tabulate`` on the driver's host yourself.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf
from tabulate import tabulate

if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and not sys.argv[2].isdigit()):
        print("Usage: word_table.py <file> [<top>]", file=sys.stderr)
        sys.exit(-1)
    top = int(sys.argv[2]) if len(sys.argv) == 3 else 10
    spark = SparkSession.builder.appName("WordTable").getOrCreate()
    words = spark.read.text(sys.argv[1]).select(
        sf.explode(sf.split(sf.lower("value"), "[^a-z]+")).alias("word")
    )
    counts = words.where(sf.col("word") != "").groupBy("word").count()
    rows = counts.orderBy(sf.desc("count"), sf.asc("word")).limit(top).collect()
    print(tabulate([(r["word"], r["count"]) for r in rows], headers=["word", "count"]))
    spark.stop()

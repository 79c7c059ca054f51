"""Word count as a plain spark-submit script: no Steward in it, and Steward runs it unchanged.

    spark-submit   examples/spark_submit_wordcount.py INPUT [TOP]
    steward submit examples/spark_submit_wordcount.py INPUT [TOP]

Prints the TOP (default 10) most frequent words of the text file INPUT with their counts,
then the number of words and of distinct words. A word is a maximal run of the letters a-z
after lower-casing, as in wordcount.py. Wrong arguments print a usage line and exit with
status -1 (255), as spark-submit users expect of a script.

Under Steward the file runs as ``__main__`` with ``sys.argv == [file, INPUT, TOP]``; the
session it builds gets the job's master and settings (``--master``, ``--conf`` ...), as
under spark-submit. Its output is the attempt's log: ``steward logs JOB``.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as sf


def count_words(source: str, top: int) -> None:
    spark = SparkSession.builder.appName("SparkSubmitWordCount").getOrCreate()
    lines = spark.read.text(source)
    words = lines.select(sf.explode(sf.split(sf.lower("value"), "[^a-z]+")).alias("word"))
    counts = words.where(sf.col("word") != "").groupBy("word").count()
    for row in counts.orderBy(sf.desc("count"), sf.asc("word")).limit(top).collect():
        print(f"{row['word']}: {row['count']}")
    totals = counts.agg(sf.sum("count").alias("words"), sf.count("*").alias("distinct")).first()
    words_total, distinct = (totals["words"] or 0, totals["distinct"]) if totals else (0, 0)
    print(f"words: {words_total}, distinct: {distinct}")
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and not sys.argv[2].isdigit()):
        print("Usage: spark_submit_wordcount.py <file> [<top>]", file=sys.stderr)
        sys.exit(-1)
    count_words(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 10)

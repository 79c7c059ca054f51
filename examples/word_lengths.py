"""How long are the words of a text? A spark-submit script that imports a helper module.

    spark-submit   --py-files examples/lib/textstats.py examples/word_lengths.py INPUT
    steward submit --py-files examples/lib/textstats.py examples/word_lengths.py INPUT

``textstats`` is not next to the script on the TaskManager: only the file named on the
command line travels with a job. ``--py-files`` sends the helper along; Steward puts it on the
driver's ``sys.path`` and in ``spark.submit.pyFiles``, so Spark's Python workers import it too
(``textstats.words`` runs in them). Without ``--py-files`` the attempt fails with
``ModuleNotFoundError: No module named 'textstats'``.
"""

import sys

import textstats
from pyspark.sql import SparkSession

if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Usage: word_lengths.py <file>", file=sys.stderr)
        sys.exit(-1)
    spark = SparkSession.builder.appName("WordLengths").getOrCreate()
    lines = spark.sparkContext.textFile(sys.argv[1])
    bands = lines.flatMap(textstats.words).map(lambda w: (textstats.length_band(w), 1))
    counts = bands.reduceByKey(lambda a, b: a + b).collect()
    for band, count in sorted(counts, key=lambda item: int(item[0].strip("+").split("-")[0])):
        print(f"{band:>5} letters: {count}")
    spark.stop()

"""The same count as a spark-submit script (what a Livy batch runs): writes it to a file."""

import sys

from pyspark.sql import SparkSession

if __name__ == "__main__":
    text, output = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.appName("count_words").getOrCreate()
    lines = spark.read.text(text)
    words = lines.selectExpr("explode(split(lower(value), '[^a-z]+')) AS word").where("word != ''")
    count = words.count()
    with open(output, "w") as out:
        out.write(str(count))
    print(f"counted {count} words")
    spark.stop()

"""Word counts computed in plain Python, and readers of the example pipelines' outputs.

The ground truth that the Spark word counts (examples/wordcount.py, streaming_wordcount.py)
are checked against, in the runner tests and the cluster tests alike.
"""

from __future__ import annotations

import collections
import csv
import json
import re
from pathlib import Path

SAMPLE = Path(__file__).parents[2] / "examples" / "data" / "sample.txt"


def count_words(*texts: str) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for text in texts:
        counts.update(word for word in re.split(r"[^a-z]+", text.lower()) if word)
    return counts


def read_csv_counts(folder: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for part in sorted(folder.glob("part-*.csv")):
        with part.open(newline="") as handle:
            for row in csv.DictReader(handle):
                counts[row["word"]] = int(row["count"])
    return counts


def read_json_counts(folder: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for part in sorted(folder.glob("part-*.json")):
        for line in part.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                counts[record["word"]] = int(record["count"])
    return counts


def split_into_files(folder: Path, parts: int) -> list[str]:
    """Write the sample as ``parts`` files cut at paragraph breaks; return their texts."""
    folder.mkdir()
    paragraphs = SAMPLE.read_text().split("\n\n")
    size = -(-len(paragraphs) // parts)
    texts = ["\n\n".join(paragraphs[i : i + size]) for i in range(0, len(paragraphs), size)]
    for number, text in enumerate(texts):
        (folder / f"part-{number:03d}.txt").write_text(text)
    return texts


def committed_batches(query_checkpoint: Path) -> int:
    commits = query_checkpoint / "commits"
    return sum(1 for entry in commits.iterdir() if entry.name.isdigit()) if commits.exists() else 0

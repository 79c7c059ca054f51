"""Regenerate sample.txt: deterministic, English-looking prose for the word count examples.

    python examples/data/make_sample.py > examples/data/sample.txt

A seeded random walk over sentence patterns and a hand-written vocabulary, so the file is the
same on every machine and carries no licence of a third party.
"""

from __future__ import annotations

import random
import sys
import textwrap


def words(text: str) -> list[str]:
    return text.split()


NAMES = words(
    """Anna Thomas Margaret Elias Clara Henry Rosa William Ada Samuel Nora Peter Lucy
Arthur Helen Jonah Martha Oliver Edith Daniel Ruth Walter Iris George Alice Frank"""
)
PLACES = [
    "Harrow Bay",
    "the old mill",
    "Wellstead",
    "the northern road",
    "the harbour",
    "Kings Ferry",
    "the market square",
    "the lighthouse",
    "Ashcombe",
    "the railway station",
    "the lower fields",
    "Saint Clement's",
    "the river crossing",
    "the orchard",
    "Millbrook",
    "the school house",
]
NOUNS = words(
    """morning evening letter window garden river bridge lamp kitchen table door road
field village harbour boat net fisherman winter summer autumn spring storm rain wind snow
cloud hill valley forest path stone wall gate roof chimney fire candle book page story
question answer reason promise secret memory voice song bell clock hour minute week year
child mother father brother sister neighbour friend stranger doctor teacher baker farmer
merchant sailor captain clerk priest widow traveller horse dog cat bird gull crow sheep
cow apple bread cheese soup tea coffee milk water wine bottle cup plate basket coat hat
boot glove scarf shawl ribbon mirror picture map ticket train carriage cart wheel engine
machine ledger account debt price coin market shop counter street corner square church
tower school lesson chalk desk bench chair bed blanket pillow shadow light darkness silence
noise laughter tears smile face hand shoulder eye heart mind thought idea plan journey
return arrival departure news rumour truth mistake chance fortune luck trouble danger
courage fear hope doubt patience anger kindness habit custom rule law court judge jury
trial witness evidence paper pen ink envelope stamp parcel package crate barrel rope anchor
sail mast deck wave tide shore sand shell rock cliff cave meadow hedge barn well pump"""
)
ADJECTIVES = words(
    """old young small large quiet loud bright dark cold warm wet dry heavy light
narrow wide long short early late sudden slow quick careful careless gentle rough kind
cruel honest strange familiar empty crowded clean dirty broken whole distant near pale
grey green blue red yellow brown white black golden silver tired restless patient anxious
curious simple plain proud humble hungry thirsty sick healthy steady shaky polite rude
clever foolish serious cheerful gloomy generous stubborn modest famous unknown ordinary
remarkable narrow steep shallow deep soft hard sweet bitter fresh stale fair unfair"""
)
VERBS = words(
    """walked waited watched listened opened closed carried lifted dropped noticed
remembered forgot answered asked wondered hurried followed turned stopped started
finished counted measured wrote read signed sealed sent received brought bought sold
borrowed lent paid owed mended painted cleaned washed cooked baked poured tasted shared
gathered scattered climbed crossed reached left entered passed visited greeted thanked
warned promised refused accepted doubted believed trusted feared hoped explained described
repeated whispered shouted laughed sighed smiled nodded frowned pointed knocked rang
lit extinguished repaired ordered arranged prepared planned decided agreed argued settled"""
)
ADVERBS = words(
    """slowly quickly quietly loudly carefully gently suddenly finally simply
certainly perhaps nearly almost rarely often always never once again soon later early
already still outside inside together alone patiently anxiously happily sadly kindly
firmly softly briefly plainly honestly"""
)
PREPOSITIONS = words("across along behind beside beyond near over under through toward into past")
CONNECTIVES = [
    "and",
    "but",
    "so",
    "while",
    "because",
    "although",
    "until",
    "before",
    "after",
    "when",
]
OPENERS = [
    "In the morning",
    "By evening",
    "That winter",
    "For a long while",
    "At first",
    "Some days later",
    "Before the storm",
    "After supper",
    "On the third day",
    "In the end",
    "Even so",
    "All the same",
    "For once",
    "Now and then",
    "Without a word",
]
EXCLAMATIONS = [
    "Well",
    "Look here",
    "Good heavens",
    "I suppose so",
    "Not at all",
    "Of course",
    "Never mind",
    "Listen",
    "Quite right",
    "I doubt it",
]
PRONOUNS = ["he", "she", "they", "we", "nobody", "everyone"]


def article(rng: random.Random) -> str:
    return rng.choice(["the", "the", "a", "his", "her", "their", "that", "one"])


def noun_phrase(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"{article(rng)} {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
    return f"{article(rng)} {rng.choice(NOUNS)}"


def clause(rng: random.Random) -> str:
    subject = rng.choice([rng.choice(NAMES), rng.choice(PRONOUNS), noun_phrase(rng)])
    pattern = rng.randrange(5)
    if pattern == 0:
        return f"{subject} {rng.choice(VERBS)} {noun_phrase(rng)}"
    if pattern == 1:
        return f"{subject} {rng.choice(VERBS)} {rng.choice(ADVERBS)}"
    if pattern == 2:
        where = rng.choice([rng.choice(PLACES), noun_phrase(rng)])
        return f"{subject} {rng.choice(VERBS)} {rng.choice(PREPOSITIONS)} {where}"
    if pattern == 3:
        verb = "were" if subject in ("they", "we") else "was"
        return f"{subject} {verb} {rng.choice(ADJECTIVES)} and {rng.choice(ADJECTIVES)}"
    where = f"{rng.choice(PREPOSITIONS)} {noun_phrase(rng)}"
    return f"{subject} {rng.choice(VERBS)} {noun_phrase(rng)} {where}"


def sentence(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.15:
        return f'"{rng.choice(EXCLAMATIONS)}," said {rng.choice(NAMES)}, "{clause(rng)}."'
    body = clause(rng)
    if rng.random() < 0.45:
        body = f"{body}, {rng.choice(CONNECTIVES)} {clause(rng)}"
    if rng.random() < 0.3:
        body = f"{rng.choice(OPENERS)}, {body}"
    body = body[0].upper() + body[1:]
    return body + rng.choice([".", ".", ".", ".", "!", "?", ";"]).replace(";", ".")


def paragraph(rng: random.Random) -> str:
    text = " ".join(sentence(rng) for _ in range(rng.randint(3, 9)))
    return textwrap.fill(text, width=78)


def generate(target_bytes: int, seed: int = 2024) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    chapter = 0
    while size < target_bytes:
        if chapter == 0 or rng.random() < 0.04:
            chapter += 1
            heading = f"CHAPTER {chapter}. {rng.choice(PLACES).upper()}"
            parts.append(heading)
            size += len(heading) + 2
        block = paragraph(rng)
        parts.append(block)
        size += len(block) + 2
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 300_000))

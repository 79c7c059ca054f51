"""The chaos suite: a real cluster under a seeded nemesis, checked against ground truth.

See docs/reliability.md; run a campaign with scripts/chaos.sh.
"""

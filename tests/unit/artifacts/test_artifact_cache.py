"""The leader's cache of checked pipelines: the same file is checked once, and the answer is
the check's own (the artifact, the program kind resolved), per entrypoint and kind asked."""

from __future__ import annotations

import pytest

from steward.artifacts import checked
from steward.artifacts.checked import CheckedArtifacts
from steward.artifacts.pipeline import ArtifactRejectedError, check_submission
from steward.wire.jobs import JobSpec, ProgramKind

SCRIPT = b"print('a script')\n"
SDK = b"def main(ctx):\n    return 1\n\n\ndef run(ctx):\n    return 2\n"


def spec(**fields: object) -> JobSpec:
    return JobSpec.model_validate({"job_id": "job-1", **fields})


def test_the_same_file_is_checked_once_and_answered_as_the_check_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checks: list[str] = []

    def counted(filename: str, data: bytes, job: JobSpec):  # type: ignore[no-untyped-def]
        checks.append(filename)
        return check_submission(filename, data, job)

    monkeypatch.setattr(checked, "check_submission", counted)
    cache = CheckedArtifacts()
    first = cache.check("stw_a.py", SDK, spec())
    again = cache.check("stw_a.py", SDK, spec(job_id="job-2", args=["x"]))
    assert checks == ["stw_a.py"] and cache.hits == 1
    assert first == check_submission("stw_a.py", SDK, spec())
    assert again[0] == first[0] and again[1].program is first[1].program
    assert again[1].job_id == "job-2" and again[1].args == ["x"]  # the caller's spec kept

    script = cache.check("stw_a.py", SCRIPT, spec())  # other bytes: checked
    assert script[1].program is ProgramKind.SCRIPT and first[1].program is ProgramKind.SDK
    cache.check("stw_a.py", SDK, spec(entrypoint="run"))  # another entrypoint: checked
    assert len(checks) == 3


def test_a_refused_file_is_refused_every_time() -> None:
    cache = CheckedArtifacts()
    for _ in range(2):
        with pytest.raises(ArtifactRejectedError, match="SyntaxError"):
            cache.check("stw_bad.py", b"def main(ctx):\n    return (\n", spec())
    assert cache.hits == 0


def test_the_cache_holds_at_most_its_bytes_and_entries() -> None:
    cache = CheckedArtifacts(max_entries=2, max_bytes=10_000)
    files = [f"def main(ctx):\n    return '{'1' * 2000}{n}'\n".encode() for n in range(4)]
    for data in files:
        cache.check("stw_big.py", data, spec())
    cache.check("stw_big.py", files[3], spec())
    assert cache.hits == 1
    cache.check("stw_big.py", files[0], spec())  # evicted: checked again
    assert cache.hits == 1
    too_big = CheckedArtifacts(max_bytes=100)
    too_big.check("stw_big.py", files[0], spec())
    too_big.check("stw_big.py", files[0], spec())
    assert too_big.hits == 0

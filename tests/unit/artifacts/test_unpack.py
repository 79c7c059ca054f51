"""Artifacts: what a submission may contain, and how a TaskManager unpacks it safely."""

from __future__ import annotations

import base64
import io
import stat
import zipfile
from pathlib import Path

import pytest

from steward.artifacts.pipeline import (
    MAX_UNPACKED_BYTES,
    ArtifactRejectedError,
    build_artifact,
    materialize,
    may_define_initialize,
)
from steward.errors import CorruptStateError
from steward.runtime.artifact import load_pipeline
from steward.wire.jobs import ArtifactKind

PIPELINE = b"def main(ctx):\n    return 42\n"


def zipped(files: dict[str, bytes], *, symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


# ---------------------------------------------------------------- build_artifact


def test_a_python_file_becomes_an_artifact_with_its_checksum() -> None:
    artifact = build_artifact("wordcount_job.py", PIPELINE)

    assert artifact.kind is ArtifactKind.PYTHON_FILE
    assert base64.b64decode(artifact.data_b64) == PIPELINE
    assert len(artifact.sha256) == 64


def test_a_syntax_error_is_refused_naming_file_and_line() -> None:
    source = b"def main(ctx):\n    return (\n\nx = 1 +\n"

    with pytest.raises(ArtifactRejectedError, match=r"broken_job\.py:\d+: SyntaxError"):
        build_artifact("broken_job.py", source)


def test_a_python_file_is_compiled_never_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')\ndef main(ctx):\n    return 1\n"

    build_artifact("side_effect_job.py", source.encode())

    assert not marker.exists()


def test_a_python_file_must_be_utf8() -> None:
    with pytest.raises(ArtifactRejectedError, match="not UTF-8"):
        build_artifact("latin_job.py", "x = 'é'\n".encode("latin-1"))


@pytest.mark.parametrize("name", ["job.txt", "job.tar.gz", "job", "../job.py", "dir/job.py", ""])
def test_other_names_and_extensions_are_refused(name: str) -> None:
    with pytest.raises(ArtifactRejectedError):
        build_artifact(name, PIPELINE)


def test_a_file_named_like_an_installed_module_is_refused() -> None:
    with pytest.raises(ArtifactRejectedError, match="installed module"):
        build_artifact("json.py", PIPELINE)


def test_a_zip_with_an_entry_module_at_the_top_is_accepted() -> None:
    data = zipped({"main.py": PIPELINE, "helpers/__init__.py": b"", "helpers/io.py": b"X = 1\n"})

    artifact = build_artifact("etl.zip", data)

    assert artifact.kind is ArtifactKind.ZIPPED_FOLDER


def test_a_zip_of_a_folder_is_accepted() -> None:
    build_artifact("etl.zip", zipped({"etl/pipeline.py": PIPELINE, "etl/util.py": b""}))


def test_a_zip_with_a_named_entry_module_needs_that_module() -> None:
    data = zipped({"jobs/__init__.py": b"", "jobs/daily.py": PIPELINE})

    build_artifact("etl.zip", data, entrypoint="jobs.daily:main")
    with pytest.raises(ArtifactRejectedError, match="entry module"):
        build_artifact("etl.zip", data)
    with pytest.raises(ArtifactRejectedError, match=r"jobs\.weekly"):
        build_artifact("etl.zip", data, entrypoint="jobs.weekly:main")


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"util.py": b""}, "entry module"),
        ({"a/main.py": PIPELINE, "b/x.py": b""}, "entry module"),
        ({"main.py": PIPELINE, "../evil.py": b""}, "unsafe entry"),
        ({"main.py": PIPELINE, "/etc/evil.py": b""}, "unsafe entry"),
        ({"main.py": PIPELINE, "sub/../../evil.py": b""}, "unsafe entry"),
        ({"main.py": b"def main(:\n"}, r"etl\.zip:main\.py:1: SyntaxError"),
    ],
)
def test_bad_zips_are_refused_with_the_reason(files: dict[str, bytes], problem: str) -> None:
    with pytest.raises(ArtifactRejectedError, match=problem):
        build_artifact("etl.zip", zipped(files))


def test_a_zip_with_a_symlink_is_refused() -> None:
    data = zipped({"main.py": PIPELINE}, symlinks={"secrets": "/etc/shadow"})

    with pytest.raises(ArtifactRejectedError, match="symbolic link"):
        build_artifact("etl.zip", data)


def test_not_a_zip_is_refused() -> None:
    with pytest.raises(ArtifactRejectedError, match="not a valid zip"):
        build_artifact("etl.zip", b"PK\x03\x04 certainly not")


def test_a_zip_bomb_is_refused_before_unpacking() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("main.py", PIPELINE)
        with archive.open("zeros.bin", "w", force_zip64=True) as member:
            chunk = bytes(1 << 20)
            for _ in range(MAX_UNPACKED_BYTES // len(chunk) + 1):
                member.write(chunk)

    with pytest.raises(ArtifactRejectedError, match="unpacks to more than"):
        build_artifact("bomb.zip", buffer.getvalue())


# ---------------------------------------------------------------- materialize


def test_a_python_file_is_written_and_loads(tmp_path: Path) -> None:
    artifact = build_artifact("answer_job.py", PIPELINE)

    path = materialize(artifact, tmp_path / "artifact")

    assert path == (tmp_path / "artifact" / "answer_job.py").resolve()
    assert path.read_bytes() == PIPELINE
    assert load_pipeline(path, "main").main(None) == 42  # type: ignore[arg-type]


def test_a_zipped_folder_unpacks_to_the_folder_holding_the_entry_module(tmp_path: Path) -> None:
    artifact = build_artifact(
        "etl.zip", zipped({"etl/main.py": PIPELINE, "etl/data/words.txt": b"a b"})
    )

    path = materialize(artifact, tmp_path / "artifact")

    assert path == (tmp_path / "artifact" / "etl").resolve()
    assert (path / "main.py").read_bytes() == PIPELINE
    assert (path / "data" / "words.txt").read_bytes() == b"a b"


def test_materialize_is_idempotent(tmp_path: Path) -> None:
    artifact = build_artifact("etl.zip", zipped({"main.py": PIPELINE}))
    first = materialize(artifact, tmp_path / "artifact")
    (first / "main.py").write_bytes(b"# the pipeline's own output stays\n")

    second = materialize(artifact, tmp_path / "artifact")

    assert second == first
    assert (first / "main.py").read_bytes() == b"# the pipeline's own output stays\n"


def test_materialize_replaces_a_different_artifact(tmp_path: Path) -> None:
    materialize(build_artifact("old_job.py", PIPELINE), tmp_path / "artifact")

    path = materialize(build_artifact("new_job.py", PIPELINE), tmp_path / "artifact")

    assert sorted(p.name for p in path.parent.iterdir() if not p.name.startswith(".")) == [
        "new_job.py"
    ]


def test_a_corrupt_artifact_is_not_written(tmp_path: Path) -> None:
    artifact = build_artifact("answer_job.py", PIPELINE)
    tampered = artifact.model_copy(update={"data_b64": base64.b64encode(b"x = 1\n").decode()})

    with pytest.raises(CorruptStateError, match="sha256"):
        materialize(tampered, tmp_path / "artifact")
    assert not (tmp_path / "artifact").exists()


# ---------------------------------------------------------------- may_define_initialize


def test_may_define_initialize_is_a_cheap_conservative_test() -> None:
    with_hook = b"def initialize(ctx):\n    pass\n\n" + PIPELINE
    assert may_define_initialize(build_artifact("hooked_job.py", with_hook))
    assert not may_define_initialize(build_artifact("plain_job.py", PIPELINE))
    zipped_hook = zipped({"main.py": PIPELINE, "lib/setup.py": with_hook})
    assert may_define_initialize(build_artifact("etl.zip", zipped_hook))
    assert not may_define_initialize(build_artifact("etl.zip", zipped({"main.py": PIPELINE})))

"""Hostile input refused before anything is stored or unpacked, and private files.

The process-level proofs (a real cluster answering 4xx and storing nothing) are in
tests/e2e/bad_input/test_hostile_requests.py; these pin each rule down on its own.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from steward.artifacts.archives import ArchiveRejectedError, unpack
from steward.artifacts.pipeline import (
    ArtifactRejectedError,
    build_artifact,
    materialize,
)
from steward.errors import CorruptStateError
from steward.jobmanager.rest.errors import ApiError
from steward.jobmanager.rest.jobs_submit import (
    MAX_JSON_CONTAINERS,
    MAX_JSON_DEPTH,
    check_json_shape,
)
from steward.sparkconf.session_settings import DEFAULTS_FILE, export
from steward.store.blob import BlobStore
from steward.store.contents import ContentStore
from steward.taskmanager.dependency_cache import DependencyCache
from steward.taskmanager.private_dirs import private_dir
from steward.wire.heartbeat import Heartbeat
from steward.wire.jobs import Artifact, ArtifactKind, Dependency, DependencyKind, JobGraph, JobSpec

PIPELINE = b"def main(ctx):\n    return 42\n"


def zip_with(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in entries:
            archive.writestr(info, data)
    return buffer.getvalue()


def special(name: str, kind: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.external_attr = (kind | 0o644) << 16
    return info


# ---------------------------------------------------------------- artifacts (submission)


@pytest.mark.parametrize("kind", [stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFSOCK])
def test_a_zip_artifact_with_a_device_or_fifo_is_refused(kind: int) -> None:
    data = zip_with([("main.py", PIPELINE), (special("dev/sda", kind), b"")])
    with pytest.raises(ArtifactRejectedError, match="device, FIFO or socket"):
        build_artifact("etl.zip", data)


@pytest.mark.parametrize(
    "name", ["..\\..\\evil.py", "C:/evil.py", "c:evil.py", "a/./b.py", "a\\b.py"]
)
def test_zip_slip_names_are_refused(name: str) -> None:
    data = zip_with([("main.py", PIPELINE), (zipfile.ZipInfo(name), b"x = 1\n")])
    with pytest.raises(ArtifactRejectedError, match="unsafe entry"):
        build_artifact("etl.zip", data)


def test_a_highly_compressed_entry_is_refused_as_a_zip_bomb() -> None:
    # 64 MiB of zeros deflate to about 64 KiB: under the unpacked limit, over the ratio.
    data = zip_with([("main.py", PIPELINE), ("zeros.bin", bytes(64 << 20))])
    with pytest.raises(ArtifactRejectedError, match="zip bomb"):
        build_artifact("bomb.zip", data)


def test_ordinary_compressible_data_is_accepted() -> None:
    text = b"".join(b"%d,name-%d,%d\n" % (i, i % 97, i * 7) for i in range(200_000))
    build_artifact("etl.zip", zip_with([("main.py", PIPELINE), ("data.csv", text)]))


def test_a_nested_archive_is_a_file_never_unpacked(tmp_path: Path) -> None:
    inner = zip_with([("../../escaped.py", b"x = 1\n")])
    artifact = build_artifact("etl.zip", zip_with([("main.py", PIPELINE), ("inner.zip", inner)]))
    materialize(artifact, tmp_path / "artifact")
    assert (tmp_path / "artifact" / "inner.zip").read_bytes() == inner
    assert not list(tmp_path.rglob("escaped.py"))


def test_a_zip_member_inflating_too_much_is_refused_from_an_archive(tmp_path: Path) -> None:
    archive = tmp_path / "data.zip"
    archive.write_bytes(zip_with([("zeros.bin", bytes(16 << 20))]))
    with pytest.raises(ArchiveRejectedError, match="zip bomb"):
        unpack(archive, tmp_path / "out")


# ---------------------------------------------------------------- request bodies and texts


def nested(depth: int) -> bytes:
    return b'{"spec": ' + b"[" * depth + b"]" * depth + b"}"


def test_json_nested_deeper_than_the_limit_is_refused() -> None:
    check_json_shape(nested(MAX_JSON_DEPTH - 1))
    with pytest.raises(ApiError, match="deeper than") as caught:
        check_json_shape(nested(MAX_JSON_DEPTH + 1))
    assert caught.value.status == 400


def test_brackets_inside_strings_do_not_count() -> None:
    body = json.dumps({"spec": {"name": "[" * 10_000}, "x": '\\"[[[['}).encode()
    check_json_shape(body)


def test_too_many_json_containers_are_refused() -> None:
    body = json.dumps({"spec": {"args": [[] for _ in range(MAX_JSON_CONTAINERS + 1)]}}).encode()
    with pytest.raises(ApiError, match="objects and arrays"):
        check_json_shape(body)


def test_a_stored_or_heartbeat_payload_nested_absurdly_is_corrupt_not_a_crash() -> None:
    # Payload.from_json reads heartbeats (POST /internal/v1/heartbeat) and ZooKeeper data.
    with pytest.raises(CorruptStateError, match="not valid JSON"):
        Heartbeat.from_json(b'{"schema": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def test_a_large_artifact_is_checked_quickly() -> None:
    data = base64.b64encode(os.urandom(8 << 20)).decode()
    check_json_shape(json.dumps({"spec": {}, "artifact": {"data_b64": data}}).encode())


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "job\x1b[2J"},
        {"name": "evil\u202eexe.py"},
        {"name": "a\x00b"},
        {"labels": {"team\n": "x"}},
        {"labels": {"team": "\x07bell"}},
        {"labels": {"": "x"}},
        {"labels": {"k": "v" * 300}},
        {"labels": {f"k{i}": "v" for i in range(65)}},
        {"job_id": "job\x00"},
        {"job_id": "j\u00f6b"},
    ],
)
def test_control_characters_and_oversized_labels_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        JobSpec.model_validate({"job_id": "ok", **fields})


def test_a_job_stored_before_the_check_still_loads() -> None:
    # A graph stored by an earlier Steward, with a control character in its name and a label:
    # refused as input, but read back from storage it must load, or the job is lost as corrupt.
    stored = JobGraph(
        spec=JobSpec.model_construct(
            **{**JobSpec(job_id="old").__dict__, "name": "a\x1bb", "labels": {"k": "\x07"}}
        ),
        artifact=Artifact(
            filename="p.py", kind=ArtifactKind.PYTHON_FILE, sha256="0" * 64, data_b64=""
        ),
        submitted_at=1.0,
    )
    loaded = JobGraph.from_json(stored.to_json())
    assert (loaded.spec.name, loaded.spec.labels) == ("a\x1bb", {"k": "\x07"})
    with pytest.raises(ValidationError):
        JobSpec.model_validate({"job_id": "new", "name": "a\x1bb"})


def test_printable_unicode_names_and_labels_are_accepted() -> None:
    spec = JobSpec(job_id="ok", name="Zählung - 日本", labels={"team": "données"})
    assert spec.name == "Zählung - 日本"


# ---------------------------------------------------------------- private files


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_dir_creates_and_tightens(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    assert mode(private_dir(loose)) == 0o700
    assert mode(private_dir(tmp_path / "a" / "b")) == 0o700


def test_private_dir_never_closes_a_shared_sticky_folder(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    private_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777


def test_a_materialized_artifact_is_private(tmp_path: Path) -> None:
    single = materialize(build_artifact("job.py", PIPELINE), tmp_path / "one")
    assert mode(single) == 0o600
    assert mode(tmp_path / "one") == 0o700
    folder = materialize(
        build_artifact("etl.zip", zip_with([("pkg/main.py", PIPELINE)])), tmp_path / "two"
    )
    assert mode(folder / "main.py") == 0o600
    assert mode(folder) == 0o700


def test_stored_blobs_and_contents_are_private(tmp_path: Path) -> None:
    blobs = BlobStore(f"file://{tmp_path / 'storage'}")
    ref = blobs.put("jobgraphs/j/1", b"spark.password=x")
    assert mode(Path(blobs.path(ref.key))) == 0o600
    contents = ContentStore(blobs)
    data = b"secret data"
    sha = hashlib.sha256(data).hexdigest()
    contents.put(sha, [data])
    assert mode(Path(blobs.path(contents.key(sha)))) == 0o600


def test_cached_dependencies_are_private(tmp_path: Path) -> None:
    contents = ContentStore(BlobStore(f"file://{tmp_path / 'storage'}"))
    data = b"a,b\n"
    sha = hashlib.sha256(data).hexdigest()
    contents.put(sha, [data])
    dependency = Dependency(kind=DependencyKind.FILE, filename="d.csv", sha256=sha, size=4)
    local = DependencyCache(contents, tmp_path / "cache").fetch(dependency)
    assert mode(Path(local.path)) == 0o400
    assert all(mode(lock) == 0o600 for lock in (tmp_path / "cache" / "locks").iterdir())


def test_the_attempts_spark_defaults_file_is_private(tmp_path: Path) -> None:
    folder = export({"spark.password": "x"}, tmp_path / "conf", environ={})
    assert mode(folder / DEFAULTS_FILE) == 0o600
    assert mode(folder) == 0o700

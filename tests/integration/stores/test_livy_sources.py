"""Files a Livy batch names on ``s3://``, read by the JobManager through s3fs from a real
S3-compatible server (moto's, a process of its own), within the allowed prefixes only."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.store import sources
from steward.store.blob import BlobStore
from steward.store.contents import ContentStore
from steward.testing.s3 import S3Server
from support import require_modules

require_modules(
    s3fs="s3:// needs s3fs (pip install steward[s3])",
    moto="the S3 server of these tests is moto's (the dev extra)",
)

SCRIPT = b"import sys\nprint('hello', sys.argv[1:])\n"


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    import s3fs  # here, not at the top: see support.require_modules

    with pytest.MonkeyPatch.context() as env, S3Server(tmp_path_factory.mktemp("s3")) as server:
        for key, value in server.environment().items():
            env.setenv(key, value)
        s3fs.S3FileSystem.clear_instance_cache()
        fs = s3fs.S3FileSystem()
        fs.pipe_file("steward/jobs/etl.py", SCRIPT)
        fs.pipe_file("steward/ha/secret.txt", b"not for batches")
        yield server
        s3fs.S3FileSystem.clear_instance_cache()


ALLOWED = sources.allowed_prefixes("s3://steward/jobs/")


def test_a_script_under_an_allowed_prefix_is_read(s3: S3Server) -> None:
    assert sources.read_bytes("file", "s3://steward/jobs/etl.py", ALLOWED, 1000) == (
        "etl.py",
        SCRIPT,
    )


def test_a_dependency_is_copied_into_the_content_store(s3: S3Server, tmp_path: Path) -> None:
    contents = ContentStore(BlobStore(f"file://{tmp_path}/storage"))
    fetched = sources.store("pyFiles[0]", "s3://steward/jobs/etl.py", ALLOWED, contents, 1000)
    assert fetched == sources.Fetched("etl.py", hashlib.sha256(SCRIPT).hexdigest(), len(SCRIPT))
    info = contents.stat(fetched.sha256)
    assert info is not None and info.size == len(SCRIPT)


def test_objects_outside_the_prefix_or_missing_are_refused_naming_the_field(
    s3: S3Server,
) -> None:
    with pytest.raises(sources.SourceError, match=r"^file: .* not under a source"):
        sources.read_bytes("file", "s3://steward/ha/secret.txt", ALLOWED, 1000)
    with pytest.raises(sources.SourceError, match=r"^files\[1\]: .* does not exist"):
        sources.read_bytes("files[1]", "s3://steward/jobs/absent.py", ALLOWED, 1000)

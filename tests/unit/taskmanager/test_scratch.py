"""An attempt's temporary files in its own folder (steward.taskmanager.scratch): the runner's
environment points Python's ``TMPDIR`` and the driver JVM's ``java.io.tmpdir`` there, and the
job's own choice wins."""

from __future__ import annotations

import shlex
from pathlib import Path

from steward.taskmanager.scratch import JVM_OPTIONS, scratch_dir, with_scratch

SCRATCH = scratch_dir(Path("/work/tm-1/job-a/1"))


def test_the_scratch_folder_is_tmp_in_the_attempts_folder() -> None:
    assert scratch_dir(Path("/work/tm-1/job-a/1")) == Path("/work/tm-1/job-a/1/tmp")


def test_tmpdir_and_the_jvms_tmpdir_point_at_the_scratch() -> None:
    env = with_scratch({"PATH": "/usr/bin", "TMPDIR": "/tmp"}, SCRATCH)

    assert env["TMPDIR"] == str(SCRATCH)
    assert env[JVM_OPTIONS] == f"-Djava.io.tmpdir={SCRATCH}"
    assert env["PATH"] == "/usr/bin"


def test_the_hosts_jvm_options_are_kept_and_the_tmpdir_appended() -> None:
    env = with_scratch({JVM_OPTIONS: "-Xss4m -Dfoo=bar"}, SCRATCH)

    assert env[JVM_OPTIONS] == f"-Xss4m -Dfoo=bar -Djava.io.tmpdir={SCRATCH}"


def test_a_job_that_chose_its_own_temporary_folders_keeps_them() -> None:
    job_env = {"TMPDIR": "/data/tmp", JVM_OPTIONS: "-Djava.io.tmpdir=/data/jvm"}
    env = with_scratch({"PATH": "/usr/bin", **job_env}, SCRATCH, job_env)

    assert env["TMPDIR"] == "/data/tmp"
    assert env[JVM_OPTIONS] == "-Djava.io.tmpdir=/data/jvm"


def test_none_is_this_processs_environment() -> None:
    env = with_scratch(None, SCRATCH)

    assert env["TMPDIR"] == str(SCRATCH)
    assert "PATH" in env


def test_a_path_with_spaces_or_quotes_reaches_the_jvm_as_one_option() -> None:
    scratch = Path('/work dir/tm "1"/job-a/1/tmp')
    env = with_scratch({JVM_OPTIONS: "-Xss4m"}, scratch)

    # spark-submit's launcher splits the variable as a shell does.
    assert shlex.split(env[JVM_OPTIONS]) == ["-Xss4m", f"-Djava.io.tmpdir={scratch}"]

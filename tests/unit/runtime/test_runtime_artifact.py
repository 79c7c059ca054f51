"""Finding and importing a pipeline: single files, folders, entrypoints and what goes wrong."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.artifacts.programs import module_name_for
from steward.runtime.artifact import load_pipeline
from steward.wire.runner_protocol import ArtifactError, RunMode


@pytest.fixture(autouse=True)
def isolated_imports() -> Iterator[None]:
    """Loading a pipeline changes sys.modules and sys.path; undo it after each test."""
    modules, path = set(sys.modules), list(sys.path)
    yield
    for name in set(sys.modules) - modules:
        del sys.modules[name]
    sys.path[:] = path


def write(path: Path, source: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def test_a_single_file_is_the_module_with_main_and_initialize(tmp_path: Path) -> None:
    artifact = write(
        tmp_path / "nightly_report.py",
        """
        def initialize(ctx):
            return "init"

        def main(ctx):
            return "main"
        """,
    )

    pipeline = load_pipeline(artifact, "main")

    assert pipeline.module.__name__ == "nightly_report"
    assert pipeline.hook(RunMode.MAIN) is pipeline.main
    assert pipeline.hook(RunMode.INITIALIZE) is pipeline.initialize
    assert pipeline.main(None) == "main"  # type: ignore[arg-type]
    assert sys.modules["nightly_report"] is pipeline.module
    assert str(tmp_path) not in sys.path  # a single file does not expose its folder


def test_without_initialize_the_initialize_hook_is_none(tmp_path: Path) -> None:
    artifact = write(tmp_path / "plain_job.py", "def main(ctx):\n    pass\n")

    assert load_pipeline(artifact, "main").hook(RunMode.INITIALIZE) is None


def test_file_names_that_are_not_identifiers_become_module_names() -> None:
    assert module_name_for(Path("/a/my-daily.job.py")) == "my_daily_job"
    assert module_name_for(Path("/a/2024_report.py")) == "_2024_report"


def test_module_function_entrypoint_of_a_file_must_name_the_file(tmp_path: Path) -> None:
    artifact = write(tmp_path / "etl-job.py", "def run(ctx):\n    return 1\n")

    assert load_pipeline(artifact, "etl_job:run").main(None) == 1  # type: ignore[arg-type]
    with pytest.raises(ArtifactError, match="a single-file artifact holds one module, 'etl_job'"):
        load_pipeline(artifact, "other:run")


def test_a_file_named_like_an_installed_module_is_refused(tmp_path: Path) -> None:
    artifact = write(tmp_path / "json.py", "def main(ctx):\n    pass\n")

    with pytest.raises(ArtifactError, match=r"json\.py has the name of an installed module"):
        load_pipeline(artifact, "main")


def test_a_file_that_is_not_python_is_refused(tmp_path: Path) -> None:
    artifact = write(tmp_path / "job.txt", "def main(ctx): pass\n")

    with pytest.raises(ArtifactError, match=r"not a \.py file"):
        load_pipeline(artifact, "main")


def test_a_missing_artifact_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist"):
        load_pipeline(tmp_path / "gone.py", "main")


@pytest.mark.parametrize(
    ("source", "complaint"),
    [
        ("def run(ctx): pass\n", "'main' not found in module"),
        ("main = 42\n", "'main' is not a function in module"),
        ("def main(ctx): pass\ninitialize = 'x'\n", "initialize exists but is not a function"),
    ],
)
def test_a_bad_entrypoint_is_refused_naming_the_module(
    tmp_path: Path, source: str, complaint: str
) -> None:
    artifact = write(tmp_path / "broken_entry.py", source)

    with pytest.raises(ArtifactError, match=complaint):
        load_pipeline(artifact, "main")


def test_errors_raised_while_importing_propagate_unchanged(tmp_path: Path) -> None:
    artifact = write(tmp_path / "explodes_on_import.py", "raise LookupError('at import')\n")

    with pytest.raises(LookupError, match="at import"):
        load_pipeline(artifact, "main")
    assert "explodes_on_import" not in sys.modules


@pytest.mark.parametrize(
    ("files", "entry"),
    [
        (["main.py", "pipeline.py", "__main__.py"], "main.py"),
        (["pipeline.py", "__main__.py"], "pipeline.py"),
        (["__main__.py"], "__main__.py"),
    ],
)
def test_a_folder_entry_module_is_the_first_of_main_pipeline_dunder_main(
    tmp_path: Path, files: list[str], entry: str
) -> None:
    for name in files:
        write(tmp_path / "job" / name, f"def main(ctx):\n    return {name!r}\n")

    pipeline = load_pipeline(tmp_path / "job", "main")

    assert pipeline.main(None) == entry  # type: ignore[arg-type]


def test_a_folder_without_an_entry_module_is_refused_listing_the_names(tmp_path: Path) -> None:
    write(tmp_path / "job" / "helpers.py", "")

    with pytest.raises(ArtifactError, match=r"main\.py, pipeline\.py, __main__\.py"):
        load_pipeline(tmp_path / "job", "main")


def test_a_folder_module_entrypoint_imports_packages_of_the_folder(tmp_path: Path) -> None:
    write(tmp_path / "job" / "jobs" / "__init__.py", "")
    write(tmp_path / "job" / "jobs" / "common.py", "FACTOR = 3\n")
    write(
        tmp_path / "job" / "jobs" / "daily.py",
        "from jobs.common import FACTOR\n\ndef run(ctx):\n    return FACTOR\n",
    )

    pipeline = load_pipeline(tmp_path / "job", "jobs.daily:run")

    assert pipeline.main(None) == 3  # type: ignore[arg-type]
    assert sys.path[0] == str(tmp_path / "job")


@pytest.mark.parametrize(
    ("entrypoint", "complaint"),
    [
        ("nowhere:main", "module 'nowhere' not found in artifact folder"),
        ("nowhere.deeper:main", "module 'nowhere.deeper' not found in artifact folder"),
        ("json:dumps", "resolves to .*, outside the artifact folder"),
    ],
)
def test_a_folder_entry_module_must_exist_inside_the_folder(
    tmp_path: Path, entrypoint: str, complaint: str
) -> None:
    write(tmp_path / "job" / "main.py", "def main(ctx): pass\n")

    with pytest.raises(ArtifactError, match=complaint):
        load_pipeline(tmp_path / "job", entrypoint)

"""The rule that tells a spark-submit script from an SDK pipeline, and what submission refuses."""

from __future__ import annotations

import io
import textwrap
import threading
import zipfile

import pytest

from steward.artifacts.pipeline import check_submission
from steward.artifacts.programs import ProgramError, parse, resolve
from steward.wire.jobs import JobSpec, ProgramKind
from support import run_interleaved

AUTO, SCRIPT, SDK = ProgramKind.AUTO, ProgramKind.SCRIPT, ProgramKind.SDK

SPARK_EXAMPLE = """
import sys
from operator import add

from pyspark.sql import SparkSession


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Usage: wordcount <file>", file=sys.stderr)
        sys.exit(-1)
    spark = SparkSession.builder.appName("PythonWordCount").getOrCreate()
    lines = spark.read.text(sys.argv[1]).rdd.map(lambda r: r[0])
    print(lines.flatMap(lambda x: x.split(" ")).map(lambda x: (x, 1)).reduceByKey(add).collect())
    spark.stop()
"""


def kind(source: str, program: ProgramKind = AUTO, entrypoint: str = "main") -> ProgramKind:
    return resolve(textwrap.dedent(source), "app.py", program, entrypoint)


def test_a_spark_example_with_a_main_guard_is_a_script() -> None:
    assert kind(SPARK_EXAMPLE) is SCRIPT


def test_a_main_function_called_under_the_guard_is_still_a_script() -> None:
    source = """
    def main():
        print("hello")

    if __name__ == "__main__":
        main()
    """
    assert kind(source) is SCRIPT


def test_the_guard_written_the_other_way_round_is_a_guard() -> None:
    assert kind("if '__main__' == __name__:\n    print(1)\n") is SCRIPT


def test_a_module_with_main_and_no_guard_is_a_pipeline() -> None:
    assert kind('"""doc"""\nimport os\n\ndef main(ctx):\n    return 1\n') is SDK


def test_main_bound_by_an_import_is_a_pipeline() -> None:
    assert kind("from jobs.daily import run as main\n") is SDK


def test_top_level_code_without_guard_or_main_is_a_script() -> None:
    assert kind("print('counting')\nfor i in range(3):\n    print(i)\n") is SCRIPT


def test_a_module_that_only_defines_things_is_refused() -> None:
    with pytest.raises(ProgramError, match="defines no main"):
        kind("import os\n\ndef mian(ctx):\n    return 1\n")


def test_an_explicit_entrypoint_makes_a_pipeline_even_with_a_guard() -> None:
    source = "def nightly(ctx):\n    return 1\n\nif __name__ == '__main__':\n    nightly(None)\n"
    assert kind(source, entrypoint="nightly") is SDK


def test_the_sdk_override_wins_over_the_guard() -> None:
    source = "def main(ctx):\n    return 1\n\nif __name__ == '__main__':\n    main(None)\n"
    assert kind(source, SDK) is SDK


def test_the_script_override_wins_over_main() -> None:
    assert kind("def main(ctx):\n    return 1\n", SCRIPT) is SCRIPT


def test_an_sdk_pipeline_without_its_entrypoint_is_refused() -> None:
    with pytest.raises(ProgramError, match="entrypoint 'nightly' not found"):
        kind("def main(ctx):\n    return 1\n", SDK, entrypoint="nightly")


def test_a_syntax_error_is_refused_with_its_line() -> None:
    with pytest.raises(ProgramError, match=r"app\.py:2: SyntaxError"):
        kind("x = 1\nif True print(x)\n")


def test_submission_stores_the_resolved_kind() -> None:
    artifact, spec = check_submission(
        "wordcount_script.py", SPARK_EXAMPLE.encode(), JobSpec(job_id="j")
    )
    assert spec.program is SCRIPT
    assert artifact.filename == "wordcount_script.py"


def test_submission_reads_the_entry_module_of_a_zip() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app/__main__.py", "import helper\nhelper.run()\n")
        archive.writestr("app/helper.py", "def run():\n    print(1)\n")
    _, spec = check_submission("app.zip", buffer.getvalue(), JobSpec(job_id="j"))
    assert spec.program is SCRIPT


def test_submission_refuses_a_pipeline_without_main() -> None:
    with pytest.raises(ProgramError, match="defines no main"):
        check_submission("p.py", b"def helper():\n    pass\n", JobSpec(job_id="j"))


class _Churn:
    """Cyclic garbage whose finalizer runs Python code: a collection in the middle of an AST's
    construction lets another thread run there."""

    def __del__(self) -> None:
        sum(range(50))


def test_parsing_on_many_threads_at_once_never_corrupts_the_ast_constructor() -> None:
    # CPython 3.11 (gh-106905): without the module's lock this fails in about 2 s with
    # "SystemError: AST constructor recursion depth mismatch" (3 runs of 3 here).
    lines = "".join(
        f"    x{i} = [{{'a': (1, 2, [3, {{4: 5}}])}} for _ in ()]\n" for i in range(200)
    )
    source = "def main(ctx):\n" + lines
    errors: list[BaseException] = []

    def parse_some() -> None:
        for _ in range(20):
            try:
                parse(source, "pipeline.py")
            except BaseException as exc:  # handed to the test's thread
                errors.append(exc)
                return

    def churn() -> None:
        for _ in range(200_000):
            first, second = _Churn(), _Churn()
            first.other, second.other = second, first  # type: ignore[attr-defined]

    threads = [threading.Thread(target=churn)]
    threads += [threading.Thread(target=parse_some) for _ in range(4)]
    run_interleaved(threads)
    assert errors == []

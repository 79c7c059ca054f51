"""How a job's code is laid out and run: the contract between who submits it and the runner.

The layout: a folder artifact's entry module is the first of :data:`ENTRY_MODULE_FILES` at
its top; a single file is imported under :func:`module_name_for`; the optional hook is
:data:`INITIALIZE_HOOK`. Submission checks (:mod:`steward.artifacts.pipeline`) and the runner
(:mod:`steward.runtime.artifact`) read the same definitions.

Is a job's entry file a spark-submit script or an SDK pipeline? Decided from its source.

A job's entry file is run one of two ways (:class:`~steward.wire.jobs.ProgramKind`):

- **script**: as ``python app.py ARGS`` would run it, as ``__main__`` with
  ``sys.argv == ["app.py", *ARGS]``; the exit status says how it went;
- **sdk**: imported as a module, then its entrypoint (``main(ctx)``) is called with a
  :class:`~steward.runtime.context.JobContext`; the return value is the job's result.

``auto`` (the default) picks one by reading the source, never by running it, with this rule,
in this order:

1. an explicit entrypoint (anything but the default ``main``) means **sdk**;
2. a top-level ``if __name__ == "__main__":`` means **script**, even when the file also
   defines ``main`` (the guard is what ``python app.py`` runs: Apache Spark's examples call
   their own ``main()`` under it). A pipeline that keeps such a guard for local runs is
   submitted with ``program=sdk`` (``steward submit --sdk``);
3. a top-level function (or name bound by ``import``/assignment) called like the
   entrypoint means **sdk**;
4. any other top-level statement that does work (a call, a loop, a ``with`` ...) means
   **script**: a plain script without a guard;
5. otherwise the file only defines things and nothing would run: the submission is refused
   (:class:`ProgramError`) rather than run as a script that silently does nothing.

What can be checked before anything runs is checked at submission (:func:`resolve`): the
source parses, and an sdk pipeline has its entrypoint. Both are errors retrying cannot fix.
"""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

from steward.errors import JobRejectedError
from steward.wire.jobs import ProgramKind

DEFAULT_ENTRYPOINT = "main"
ENTRY_MODULE_FILES = ("main.py", "pipeline.py", "__main__.py")
INITIALIZE_HOOK = "initialize"


def module_name_for(path: Path) -> str:
    """The name a single-file pipeline is imported under."""
    name = re.sub(r"\W", "_", path.stem)
    return f"_{name}" if name[:1].isdigit() else name


# Top-level statements that only define or bind names: a module made of these does nothing.
_DEFINITIONS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Pass,
    ast.Global,
    ast.Nonlocal,
)


class ProgramError(JobRejectedError):
    """The entry file is neither a runnable script nor a pipeline with its entrypoint."""


def resolve(source: str, where: str, program: ProgramKind, entrypoint: str) -> ProgramKind:
    """The program kind of ``source`` (named ``where`` in errors), never ``auto``.

    Raises :class:`ProgramError` if the source does not parse, an sdk pipeline lacks its
    entrypoint function, or an ``auto`` file would do nothing as a script.
    """
    tree = parse(source, where)
    function = entrypoint.rpartition(":")[2]
    if program is ProgramKind.AUTO:
        program = detect(tree, entrypoint)
    if program is ProgramKind.SDK and function not in top_level_names(tree):
        raise ProgramError(
            f"{where}: entrypoint {function!r} not found: define {function}(ctx), or submit"
            " the file as a script (program 'script')"
        )
    return program


_PARSING = threading.Lock()
"""One ``ast.parse`` at a time in this process. CPython 3.11 keeps the AST constructor's
recursion depth in per-interpreter state: two threads building ASTs at once (a JobManager
checks submissions on a thread pool), one interrupted by a finalizer that lets the other run,
corrupt it, and the parse fails with ``SystemError: AST constructor recursion depth mismatch``
(CPython gh-106905; found by the seed-2031 network campaign as a 500 on a submission)."""


def parse(source: str, where: str) -> ast.Module:
    try:
        with _PARSING:
            return ast.parse(source, filename=where)
    except SyntaxError as exc:
        line = f":{exc.lineno}" if exc.lineno else ""
        raise ProgramError(f"{where}{line}: {type(exc).__name__}: {exc.msg}") from None
    except ValueError as exc:  # source with NUL bytes
        raise ProgramError(f"{where}: cannot be parsed: {exc}") from None


def detect(tree: ast.Module, entrypoint: str = DEFAULT_ENTRYPOINT) -> ProgramKind:
    """Rules 1 to 5 of the module docstring on a parsed module."""
    if entrypoint != DEFAULT_ENTRYPOINT:
        return ProgramKind.SDK
    if any(_is_main_guard(node) for node in tree.body):
        return ProgramKind.SCRIPT
    if DEFAULT_ENTRYPOINT in top_level_names(tree):
        return ProgramKind.SDK
    if any(_does_work(node) for node in tree.body):
        return ProgramKind.SCRIPT
    raise ProgramError(
        "the file defines no main(ctx) and runs nothing at its top level: add main(ctx) for"
        " a pipeline, or an 'if __name__ == \"__main__\":' block for a script"
    )


def top_level_names(tree: ast.Module) -> set[str]:
    """Names the module binds at its top level (functions, classes, imports, assignments)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(_target_names(node.targets))
        elif isinstance(node, ast.AnnAssign):
            names.update(_target_names([node.target]))
    return names


def _target_names(targets: list[ast.expr]) -> set[str]:
    names: set[str] = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names.add(node.id)
    return names


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    has_name = any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    has_main = any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return has_name and has_main


def _does_work(node: ast.stmt) -> bool:
    if isinstance(node, _DEFINITIONS):
        return False
    # A docstring or another bare constant is not work.
    return not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))

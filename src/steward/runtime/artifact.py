"""Finding a pipeline's code in its artifact and importing it.

An artifact is an absolute local path, either

- a single ``.py`` file: it is the pipeline module, imported under its file name
  (``wordcount.py`` -> ``wordcount``; characters that are not valid in a name become ``_``).
  Its folder is *not* put on ``sys.path``: the file is the whole pipeline, and a file named
  like an installed module (``json.py``, ``pyspark.py``) is refused instead of shadowing it;
- a folder (an unpacked zip): the folder goes first on ``sys.path``, so its modules and
  packages import each other as usual. Without a module in the entrypoint, the entry module
  is the first of ``main.py``, ``pipeline.py`` and ``__main__.py`` found at the folder's top.

The entrypoint (``JobSpec.entrypoint``) is ``function`` (in the entry module) or
``module:function``; for a single file ``module`` must be the file's module name. The
optional ``initialize(ctx)`` hook is looked up in the same module. A missing file, entry
module or function is an :class:`ArtifactError` with a message naming what was looked for;
an exception raised while importing the user's module (a SyntaxError, a missing dependency,
anything at module level) propagates unchanged so its traceback reaches the job's cause.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from steward.artifacts.programs import ENTRY_MODULE_FILES, INITIALIZE_HOOK, module_name_for
from steward.wire.runner_protocol import ArtifactError, RunMode

if TYPE_CHECKING:
    from steward.runtime.context import JobContext

log = logging.getLogger(__name__)

# __main__.py cannot be imported under its own name: sys.modules["__main__"] is the runner.
_DUNDER_MAIN_NAME = "__steward_pipeline_main__"

Hook = Callable[["JobContext"], Any]


@dataclass(frozen=True)
class Pipeline:
    """A loaded pipeline: its entry module, its entrypoint and its optional initialize hook."""

    module: ModuleType
    main: Hook
    initialize: Hook | None

    def hook(self, mode: RunMode) -> Hook | None:
        """The function an attempt of ``mode`` calls; None means "nothing to do"."""
        return self.main if mode is RunMode.MAIN else self.initialize


def load_pipeline(artifact_path: str | Path, entrypoint: str) -> Pipeline:
    """Import the pipeline in ``artifact_path`` and resolve ``entrypoint`` in it."""
    path = Path(artifact_path)
    module_name, _, function_name = entrypoint.rpartition(":")
    if path.is_file():
        module = _load_file(path, module_name)
    elif path.is_dir():
        module = _load_from_folder(path, module_name)
    else:
        raise ArtifactError(f"artifact {path} does not exist (expected a .py file or a folder)")
    main = getattr(module, function_name, None)
    if not callable(main):
        what = "is not a function" if main is not None else "not found"
        raise ArtifactError(
            f"entrypoint {entrypoint!r}: {function_name!r} {what} in module"
            f" {module.__name__} ({module.__file__})"
        )
    initialize = getattr(module, INITIALIZE_HOOK, None)
    if initialize is not None and not callable(initialize):
        raise ArtifactError(f"{module.__name__}.{INITIALIZE_HOOK} exists but is not a function")
    return Pipeline(module=module, main=main, initialize=initialize)


def entry_file(artifact_path: str | Path, entrypoint: str) -> Path:
    """The file a script-mode attempt runs: the artifact itself, or the folder's entry module
    (the entrypoint's module, else the first of :data:`ENTRY_MODULE_FILES`)."""
    path = Path(artifact_path)
    if path.is_file():
        return path
    module = entrypoint.rpartition(":")[0].replace(".", "/")
    if module:
        candidates = [path / f"{module}.py", path / module / "__init__.py"]
    else:
        candidates = [path / name for name in ENTRY_MODULE_FILES]
    found = next((candidate for candidate in candidates if candidate.is_file()), None)
    if found is None:
        raise ArtifactError(
            f"artifact {path} has no entry file: expected {' or '.join(map(str, candidates))}"
        )
    return found


def _load_file(path: Path, module_name: str) -> ModuleType:
    if path.suffix != ".py":
        raise ArtifactError(f"artifact {path} is a file but not a .py file")
    name = module_name_for(path)
    if module_name and module_name != name:
        raise ArtifactError(
            f"entrypoint module {module_name!r} is not in the artifact: a single-file"
            f" artifact holds one module, {name!r}"
        )
    if name in sys.modules or importlib.util.find_spec(name) is not None:
        raise ArtifactError(
            f"pipeline file {path.name} has the name of an installed module ({name});"
            " rename the file"
        )
    return _exec_file(name, path)


def _load_from_folder(folder: Path, module_name: str) -> ModuleType:
    sys.path.insert(0, str(folder))
    if not module_name:
        entry = next((folder / f for f in ENTRY_MODULE_FILES if (folder / f).is_file()), None)
        if entry is None:
            raise ArtifactError(
                f"artifact folder {folder} has no entry module: expected one of"
                f" {', '.join(ENTRY_MODULE_FILES)}, or an entrypoint 'module:function'"
            )
        if entry.name == "__main__.py":
            return _exec_file(_DUNDER_MAIN_NAME, entry)
        module_name = entry.stem
    try:
        spec = importlib.util.find_spec(module_name)
    except ModuleNotFoundError:  # a parent package of a dotted name is missing
        spec = None
    if spec is None:
        raise ArtifactError(f"module {module_name!r} not found in artifact folder {folder}")
    module = importlib.import_module(module_name)
    origin = Path(module.__file__ or "")
    if not origin.resolve().is_relative_to(folder.resolve()):
        raise ArtifactError(
            f"module {module_name!r} resolves to {origin}, outside the artifact folder {folder}"
        )
    return module


def _exec_file(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ArtifactError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, like a normal import: dataclasses, pickling and Spark's
    # by-value UDF shipping all look the module up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    log.info("pipeline loaded module=%s path=%s", name, path)
    return module

"""Where a configuration comes from: ``steward.toml``, ``STEWARD_*`` environment variables and
``-D key=value`` overrides, merged over the defaults (later wins) and validated once by
:func:`load`.

The file is the one named, else ``$STEWARD_CONFIG``, else ``./steward.toml``, else the local
cluster's ``./.steward/steward.toml``, the first that exists. Environment variables are
``STEWARD_`` + the key upper-cased with ``.`` and ``-`` turned into ``_``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from steward.config.configuration import Configuration, validate
from steward.config.keys import OPTIONS
from steward.errors import ConfigurationError

LOCAL_CLUSTER_CONFIG = Path(".steward/steward.toml")
"""Written by ``steward cluster start``; read when no other configuration file is given, so
every command run beside a local cluster finds it."""


def _flatten(table: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    # steward.toml may spell keys flat ("a.b" = 1) or as nested tables ([a] b = 1).
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, dict):
            yield from _flatten(value, prefix=f"{key}.")
        else:
            yield key, value


def read_toml(path: Path) -> dict[str, Any]:
    """Read a steward.toml into flat keys; a syntax error names the file and line."""
    try:
        with path.open("rb") as handle:
            return dict(_flatten(tomllib.load(handle)))
    except FileNotFoundError as exc:
        raise ConfigurationError(f"configuration file {path} does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"{path}: invalid TOML: {exc}") from exc


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """Parse ``-D key=value`` arguments."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigurationError(f"-D expects key=value, got {pair!r}")
        result[key.strip()] = value
    return result


def load(
    config_file: Path | None = None,
    overrides: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Configuration:
    """Merge defaults, ``config_file`` (else $STEWARD_CONFIG, else ./steward.toml, else the
    local cluster's ./.steward/steward.toml, the first that exists), env and overrides."""
    environ = os.environ if environ is None else environ
    raw: dict[str, object] = {}
    sources: dict[str, str] = {}
    path = config_file
    if path is None and environ.get("STEWARD_CONFIG"):
        path = Path(environ["STEWARD_CONFIG"])
    if path is None and Path("steward.toml").is_file():
        path = Path("steward.toml")
    if path is None and LOCAL_CLUSTER_CONFIG.is_file():
        path = LOCAL_CLUSTER_CONFIG
    if path is not None:
        for key, value in read_toml(path).items():
            raw[key], sources[key] = value, str(path)
    for option in OPTIONS:
        if option.env_var in environ:
            raw[option.key], sources[option.key] = environ[option.env_var], option.env_var
    for key, value in (overrides or {}).items():
        raw[key], sources[key] = value, "-D"
    return validate(raw, sources)

"""What the local cluster's processes run with: the user's own settings, and ``steward.toml``.

The user's settings are what they wrote themselves (their ``--config`` file, else
``$STEWARD_CONFIG``, else ``./steward.toml``, then every ``-D``), as raw values: never the
cluster's own ``.steward/steward.toml`` from an earlier start, or a managed quorum would look
like a configured one. Whether a quorum or cluster id was configured decides whether the
cluster manages its own ZooKeeper and picks its own id.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from steward import files
from steward.config import OPTIONS, read_toml
from steward.errors import ConfigurationError

QUORUM = "high-availability.zookeeper.quorum"
CLUSTER_ID = "high-availability.cluster-id"
STORAGE_DIR = "high-availability.storage-dir"
TASKMANAGER_WORKDIR = "taskmanager.workdir"
SLOTS = "taskmanager.numberOfTaskSlots"
BIND_HOST = "jobmanager.bind-host"
CLIENT_ACL = "high-availability.zookeeper.client.acl"
DIGEST_FILE = "high-availability.zookeeper.digest-file"

_ENV_VARS = {option.key: option.env_var for option in OPTIONS}


@dataclass(frozen=True)
class UserSettings:
    """Raw settings from the user's file and ``-D``s; ``environ`` for what env vars set."""

    raw: Mapping[str, object]
    environ: Mapping[str, str]

    @classmethod
    def collect(
        cls,
        config_file: Path | None,
        overrides: Mapping[str, object],
        environ: Mapping[str, str] | None = None,
    ) -> UserSettings:
        environ = os.environ if environ is None else environ
        path = config_file
        if path is None and environ.get("STEWARD_CONFIG"):
            path = Path(environ["STEWARD_CONFIG"])
        if path is None and Path("steward.toml").is_file():
            path = Path("steward.toml")
        raw: dict[str, object] = dict(read_toml(path)) if path is not None else {}
        raw.update(overrides)
        return cls(raw, dict(environ))

    def configured(self, key: str) -> str | None:
        """The value the user gave ``key`` (env var over file and -D, as the processes see
        it: they inherit the environment), or None."""
        env = self.environ.get(_ENV_VARS[key])
        if env is not None:
            return env
        value = self.raw.get(key)
        return None if value is None else str(value)


def cluster_settings(
    user: UserSettings,
    *,
    state_root: Path,
    quorum: str,
    cluster_id: str,
    slots: int | None,
    digest_file: Path | None = None,
) -> dict[str, object]:
    """The effective settings written to ``.steward/steward.toml``; ``digest_file``: the
    ZooKeeper credential the cluster made (a user's own setting wins)."""
    settings: dict[str, object] = {
        STORAGE_DIR: f"file://{(state_root / 'storage').absolute()}",
        TASKMANAGER_WORKDIR: str((state_root / "work").absolute()),
        SLOTS: 2,
    }
    if digest_file is not None:
        settings[DIGEST_FILE] = str(digest_file.absolute())
    settings.update(user.raw)
    settings[QUORUM] = quorum
    settings[CLUSTER_ID] = cluster_id
    if slots is not None:
        settings[SLOTS] = slots
    return settings


def write_toml(path: Path, settings: Mapping[str, object], header: str) -> None:
    """Write flat ``"key" = value`` lines (every value a TOML scalar), atomically."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += [f"{json.dumps(key)} = {_toml_value(key, value)}" for key, value in settings.items()]
    files.write_atomically(path, "\n".join(lines) + "\n")


def _toml_value(key: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    raise ConfigurationError(f"{key}: cannot write {value!r} to steward.toml", key=key)

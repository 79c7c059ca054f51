"""Configuration: the known keys, their defaults, and how sources are merged and validated.

Sources, lowest precedence first: built-in defaults, ``steward.toml``, environment variables
(``STEWARD_`` + the key upper-cased with ``.`` and ``-`` turned into ``_``), and ``-D key=value``
overrides. Keys are Flink-style (``high-availability.zookeeper.quorum``). Everything is validated
once, in :func:`load`: an unknown key or a bad value is a :class:`ConfigurationError` naming the
key, and nothing runs on a half-valid configuration.

The modules, each with one job:

- :mod:`~steward.config.units`: durations and sizes, and the converters of raw values;
- :mod:`~steward.config.keys`: the table of keys (:data:`OPTIONS`): default, check, help;
- :mod:`~steward.config.configuration`: validation and the validated :class:`Configuration`;
- :mod:`~steward.config.loading`: the sources (file, environment, ``-D``) and :func:`load`;
- :mod:`~steward.config.settings`: the typed, frozen :class:`Settings` a process reads
  (``config.settings.jobmanager.port``), built once from a validated configuration.
- :mod:`~steward.config.docs`: docs/configuration.md's table of keys, generated from the table.
"""

from __future__ import annotations

from steward.config.configuration import Configuration
from steward.config.keys import FENCE_AFTER_SHARE, MIN_ATTEMPT_LOG_SIZE, OPTIONS, Option
from steward.config.keys_scheduling import DEFAULT_QUEUE, LabelLimit, QueueSpec
from steward.config.loading import LOCAL_CLUSTER_CONFIG, load, parse_overrides, read_toml
from steward.config.settings import (
    ClientSettings,
    JobManagerSettings,
    LogArchiveSettings,
    NotificationSettings,
    ResultSettings,
    SchedulingSettings,
    Settings,
    SparkSettings,
    StorageSettings,
    TaskManagerSettings,
    ZooKeeperSettings,
)
from steward.config.settings_security import (
    OidcSettings,
    RateLimitSettings,
    SecuritySettings,
    TlsSettings,
)
from steward.config.units import format_duration, parse_duration, parse_size

__all__ = [
    "DEFAULT_QUEUE",
    "FENCE_AFTER_SHARE",
    "LOCAL_CLUSTER_CONFIG",
    "MIN_ATTEMPT_LOG_SIZE",
    "OPTIONS",
    "ClientSettings",
    "Configuration",
    "JobManagerSettings",
    "LabelLimit",
    "LogArchiveSettings",
    "NotificationSettings",
    "OidcSettings",
    "Option",
    "QueueSpec",
    "RateLimitSettings",
    "ResultSettings",
    "SchedulingSettings",
    "SecuritySettings",
    "Settings",
    "SparkSettings",
    "StorageSettings",
    "TaskManagerSettings",
    "TlsSettings",
    "ZooKeeperSettings",
    "format_duration",
    "load",
    "parse_duration",
    "parse_overrides",
    "parse_size",
    "read_toml",
]

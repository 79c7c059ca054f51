"""Typed settings: built once from the validated configuration, frozen, and every key of the
table reachable through them, so no process needs ``config["some.key"]``."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest

from steward.config import (
    OPTIONS,
    ClientSettings,
    Configuration,
    JobManagerSettings,
    LogArchiveSettings,
    RateLimitSettings,
    ResultSettings,
    Settings,
    SparkSettings,
    StorageSettings,
    TaskManagerSettings,
    TlsSettings,
    ZooKeeperSettings,
    load,
)

SRC = Path(__file__).parents[2] / "src" / "steward"

# A valid value other than the default for every key; each alone must change the settings.
OTHER_VALUES: dict[str, str] = {
    "high-availability.zookeeper.quorum": "zk1:2181,zk2:2181",
    "high-availability.zookeeper.root": "/elsewhere",
    "high-availability.cluster-id": "prod",
    "high-availability.zookeeper.session-timeout": "20s",
    "high-availability.zookeeper.connection-timeout": "5s",
    "high-availability.zookeeper.tolerate-suspended-connections": "false",
    "high-availability.crash-detection": "0",
    "high-availability.record-format": "1",
    "high-availability.zookeeper.client.acl": "open",
    "high-availability.zookeeper.digest-file": "/etc/steward/zookeeper.digest",
    "high-availability.storage-dir": "s3://bucket/steward",
    "taskmanager.numberOfTaskSlots": "5",
    "taskmanager.fence-after": "5s",
    "taskmanager.deadman-timeout": "5s",
    "taskmanager.spark.prewarm-runners": "1",
    "taskmanager.workdir": "/srv/steward/work",
    "taskmanager.attempt-log.max-size": "0",
    "taskmanager.workdir.retention": "0",
    "taskmanager.bind-host": "0.0.0.0",
    "taskmanager.port": "9091",
    "taskmanager.advertised-address": "http://tm1:9091",
    "jobmanager.bind-host": "0.0.0.0",
    "jobmanager.port": "9090",
    "jobmanager.advertised-address": "http://jm1:9090",
    "jobmanager.trusted-proxies": "10.0.0.5, 10.1.2.0/16,::1,2001:db8::/32",
    "jobmanager.fence-after": "5s",
    "jobmanager.initialize-timeout": "2m",
    "jobmanager.recovery-parallelism": "2",
    "jobmanager.warm-standby": "false",
    "jobmanager.cancel-grace": "3s",
    "jobmanager.replacement-grace": "2s",
    "jobmanager.upload.max-size": "1g",
    "jobmanager.artifact.max-size": "16m",
    "jobmanager.livy.allowed-sources": "/data/jobs, s3://bucket/jobs/",
    "jobmanager.contents.retention": "2h",
    "jobmanager.results.max-age": "365d",
    "jobmanager.results.max-count": "1000000",
    "jobmanager.results.check-interval": "1h",
    "jobmanager.logs.max-age": "7d",
    "jobmanager.logs.max-total-size": "1g",
    "jobmanager.logs.check-interval": "1m",
    "jobmanager.events.keep-alive": "5s",
    "jobmanager.events.buffer": "50",
    "jobmanager.doctor.interval": "15m",
    "heartbeat.interval": "2s",
    "heartbeat.idle-hold": "15s",
    "heartbeat.progress-interval": "5s",
    "spark.master": "yarn",
    "history.event-log.enabled": "false",
    "history.event-log.dir": "hdfs://nn/spark-events",
    "history.server.enabled": "true",
    "history.server.port": "18081",
    "history.server.url": "https://history.example.com",
    "notifications.webhooks": "https://hooks.example.com/a, https://hooks.example.com/b?t=1",
    "notifications.events": "failed,TIMEOUT",
    "notifications.allowed-urls": "https://hooks.example.com/",
    "notifications.secret-file": "/etc/steward/webhook.secret",
    "notifications.timeout": "3s",
    "notifications.max-age": "2h",
    "notifications.outbox-max": "50",
    "scheduling.queues": "etl:guarantee=0.6,maximum=1,weight=2",
    "scheduling.max-concurrent": "team=ml:4",
    "security.proxy-users": "etl=alice, etl=team:data",
    "security.rate-limits.auth-failures.per-address": "7",
    "security.rate-limits.auth-failures.per-credential": "0",
    "security.rate-limits.auth-failures.window": "90s",
    "security.rate-limits.submissions.per-team": "500",
    "security.rate-limits.submissions.window": "1h",
    "rest.address": "http://jm1:9090",
    "rest.ssl.enabled": "true",
    "rest.ssl.certificate": "/etc/steward/tls/jm.pem",
    "rest.ssl.key": "/etc/steward/tls/jm-key.pem",
    "rest.ssl.ca": "/etc/steward/tls/ca.pem",
    "rest.ssl.client-auth": "require",
    "log.format": "json",
    "cluster.ssh.command": "/usr/local/bin/ssh",
    "cluster.ssh.options": "-i /etc/steward/id_ed25519 -o BatchMode=yes",
    "cluster.remote.python": "/opt/steward/bin/python",
    "state.checkpoints.num-retained": "7",
    "security.auth.enabled": "false",
    "security.auth.client-certificates": "true",
    "security.internal.token-file": "/etc/steward/internal.token",
    "security.audit.file": "/var/log/steward/audit.jsonl",
    "security.oidc.issuer": "https://idp.example.com/realms/data",
    "security.oidc.client-id": "steward",
    "security.oidc.client-secret-file": "/etc/steward/oidc.secret",
    "security.oidc.audience": "steward-api",
    "security.oidc.user-claim": "preferred_username",
    "security.oidc.groups-claim": "roles",
    "security.oidc.group-roles": "ops=admin",
    "security.oidc.group-teams": "data-eng=etl",
    "security.oidc.algorithms": "ES256",
    "security.oidc.leeway": "5s",
    "security.oidc.jwks-refresh-floor": "1m",
    "security.oidc.scopes": "openid email",
    "security.oidc.redirect-uri": "https://steward.example.com/ui/login/callback",
    "security.oidc.display-name": "Keycloak",
    "security.oidc.ca": "/etc/steward/idp-ca.pem",
    "security.teams.default": "everyone",
    "client.token-file": "/home/me/.steward.token",
}


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # load() reads ./steward.toml when present: run every test in an empty directory.
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_defaults_give_the_documented_typed_values(_isolated_cwd: Path) -> None:
    settings = load(environ={}).settings
    assert settings.zookeeper == ZooKeeperSettings(
        quorum="127.0.0.1:2181",
        root="/steward",
        cluster_id="default",
        session_timeout=10.0,
        connection_timeout=15.0,
        tolerate_suspended=True,
        crash_detection=0.05,
        client_acl="creator",
        digest_file="",
        record_format=2,
    )
    assert settings.zookeeper.cluster_root == "/steward/default"
    assert settings.storage == StorageSettings(
        storage_dir=f"file://{_isolated_cwd.resolve()}/.steward/storage", checkpoints_retained=3
    )
    assert settings.results == ResultSettings(max_age=0.0, max_count=0, check_interval=600.0)
    assert settings.log_archive == LogArchiveSettings(
        max_age=30 * 86400.0, max_total_size=10 << 30, check_interval=600.0
    )
    assert settings.jobmanager == JobManagerSettings(
        bind_host="127.0.0.1",
        port=8081,
        advertised_address="",
        trusted_proxies=(),
        fence_after=6.0,
        initialize_timeout=60.0,
        recovery_parallelism=8,
        warm_standby=True,
        cancel_grace=10.0,
        replacement_grace=1.0,
        upload_max_size=8 << 30,
        artifact_max_size=64 << 20,
        livy_allowed_sources="",
        contents_retention=3600.0,
        events_keep_alive=15.0,
        events_buffer=10000,
        doctor_interval=3600.0,
    )
    assert settings.taskmanager == TaskManagerSettings(
        slots=2,
        fence_after=6.0,
        deadman_timeout=6.0,
        prewarm_runners=0,
        workdir=Path("./.steward/work"),
        attempt_log_max_size=64 << 20,
        workdir_retention=3600.0,
        heartbeat_interval=1.0,
        heartbeat_idle_hold=10.0,
        heartbeat_progress_interval=10.0,
    )
    assert settings.spark == SparkSettings(master="local[*]")
    assert settings.client == ClientSettings(rest_address="")
    assert settings.tls == TlsSettings(enabled=False, certificate=None, key=None, ca=None)


def test_overrides_arrive_parsed_and_typed() -> None:
    settings = load(environ={}, overrides=OTHER_VALUES).settings
    assert settings.zookeeper.cluster_root == "/elsewhere/prod"
    assert settings.zookeeper.tolerate_suspended is False
    assert settings.zookeeper.session_timeout == 20.0
    assert settings.jobmanager.port == 9090
    assert settings.jobmanager.trusted_proxies == (
        "10.0.0.5",
        "10.1.0.0/16",
        "::1",
        "2001:db8::/32",
    )
    assert settings.jobmanager.initialize_timeout == 120.0
    assert settings.jobmanager.upload_max_size == 1 << 30
    assert settings.jobmanager.artifact_max_size == 16 << 20
    assert settings.jobmanager.livy_allowed_sources == "/data/jobs, s3://bucket/jobs/"
    assert settings.taskmanager.slots == 5
    assert settings.taskmanager.workdir == Path("/srv/steward/work")
    assert settings.taskmanager.attempt_log_max_size is None  # 0 turns the cap off
    assert settings.storage == StorageSettings("s3://bucket/steward", 7)
    assert settings.spark.master == "yarn"
    assert settings.cluster.ssh_options == "-i /etc/steward/id_ed25519 -o BatchMode=yes"
    assert settings.cluster.remote_python == "/opt/steward/bin/python"
    assert settings.client.rest_address == "http://jm1:9090"
    notifications = settings.notifications
    assert notifications.webhook_urls == (
        "https://hooks.example.com/a",
        "https://hooks.example.com/b?t=1",
    )
    assert notifications.event_names == {"FAILED", "TIMEOUT"}
    assert notifications.allowed_prefixes == ("https://hooks.example.com/",)
    assert (notifications.timeout, notifications.max_age, notifications.outbox_max) == (
        3.0,
        7200.0,
        50,
    )
    assert settings.rate_limits == RateLimitSettings(
        auth_failures_per_address=7,
        auth_failures_per_credential=0,
        auth_failure_window=90.0,
        submissions_per_team=500,
        submission_window=3600.0,
    )
    assert settings.tls == TlsSettings(
        enabled=True,
        certificate=Path("/etc/steward/tls/jm.pem"),
        key=Path("/etc/steward/tls/jm-key.pem"),
        ca=Path("/etc/steward/tls/ca.pem"),
        client_auth="require",
    )


def test_derived_timeouts_follow_the_session_timeout() -> None:
    config = load(environ={}, overrides={"high-availability.zookeeper.session-timeout": "20s"})
    timing = config.settings.timing
    assert (timing.fence_after, timing.deadman_timeout, timing.jobmanager_fence_after) == (
        12.0,
        12.0,
        12.0,
    )
    assert timing.session_timeout == 20.0
    assert timing.replacement_grace == 1.0
    assert timing.problems() == []


def test_every_key_of_the_table_has_another_value_here() -> None:
    # A new key must be added to OTHER_VALUES, and so to the test below.
    assert set(OTHER_VALUES) == {option.key for option in OPTIONS}


@pytest.mark.parametrize("key", sorted(OTHER_VALUES))
def test_every_key_is_exposed_through_the_typed_settings(key: str) -> None:
    # Given the default settings / When one key alone changes / Then the settings change: a key
    # no settings field reads would leave them equal.
    default = load(environ={}).settings
    changed = load(environ={}, overrides={key: OTHER_VALUES[key]}).settings
    assert changed != default, f"{key} is not exposed through steward.config.Settings"


def test_every_key_names_one_settings_field_and_every_field_has_one_key() -> None:
    # The table is the one place a key is written: each option names the field that exposes it.
    groups = typing.get_type_hints(Settings)
    fields = {
        f"{group}.{field.name}"
        for group, kind in groups.items()
        for field in dataclasses.fields(kind)
    }
    named = [option.setting for option in OPTIONS]
    assert sorted(named) == sorted(set(named)), "two keys name the same settings field"
    assert set(named) == fields


def test_the_settings_module_writes_no_key() -> None:
    source = (SRC / "config" / "settings.py").read_text(encoding="utf-8")
    written = [option.key for option in OPTIONS if f'"{option.key}"' in source]
    assert written == []


def test_settings_are_frozen_slotted_values() -> None:
    settings = load(environ={}).settings
    groups = [getattr(settings, field.name) for field in dataclasses.fields(settings)]
    for value in [settings, *groups]:
        assert not hasattr(value, "__dict__"), type(value).__name__
        name = dataclasses.fields(value)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, getattr(value, name))
    assert hash(settings) == hash(load(environ={}).settings)


def test_settings_are_built_once_with_the_configuration() -> None:
    config = load(environ={})
    assert config.settings is config.settings
    assert config.settings == Settings.from_values(config.as_dict())
    assert Configuration(config.as_dict()).settings == config.settings


def test_no_module_outside_the_config_package_reads_a_key_by_name() -> None:
    # Production code reads typed settings; config["key"] returns Any, which each caller cast.
    pattern = re.compile(r"""\bconfig\[\s*["']""")
    readers = [
        f"{path.relative_to(SRC)}:{number}"
        for path in sorted(SRC.rglob("*.py"))
        if SRC / "config" not in path.parents
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert readers == []

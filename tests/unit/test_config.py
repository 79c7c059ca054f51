"""Configuration: sources merge as defaults < steward.toml < env < -D; every value is validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.config import (
    OPTIONS,
    Configuration,
    format_duration,
    load,
    parse_duration,
    parse_overrides,
    read_toml,
)
from steward.errors import ConfigurationError

SESSION_TIMEOUT = "high-availability.zookeeper.session-timeout"
SESSION_TIMEOUT_ENV = "STEWARD_HIGH_AVAILABILITY_ZOOKEEPER_SESSION_TIMEOUT"
QUORUM = "high-availability.zookeeper.quorum"
CLUSTER_ID = "high-availability.cluster-id"
STORAGE_DIR = "high-availability.storage-dir"


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # load() reads ./steward.toml when present: run every test in an empty directory.
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- defaults and precedence


def test_defaults_apply_when_no_source_sets_a_key() -> None:
    # Given no file, no environment and no overrides
    # When loading
    config = load(environ={})
    # Then every option has its documented default
    assert config.settings.zookeeper.quorum == "127.0.0.1:2181"
    assert config.settings.zookeeper.cluster_root == "/steward/default"
    assert config.settings.zookeeper.tolerate_suspended is True
    assert config.settings.storage.checkpoints_retained == 3
    assert set(config.as_dict()) == {option.key for option in OPTIONS}


def test_default_timeouts_are_the_documented_seconds() -> None:
    # Given no source sets the ZooKeeper timeouts
    # When loading
    config = load(environ={})
    # Then they are the documented 10 s and 15 s (not 10 ms and 15 ms)
    assert config.settings.zookeeper.session_timeout == 10.0
    assert config.settings.zookeeper.connection_timeout == 15.0


def test_toml_overrides_defaults(tmp_path: Path) -> None:
    # Given a steward.toml that sets the session timeout
    path = write_toml(tmp_path / "steward.toml", f'"{SESSION_TIMEOUT}" = "4s"\n')
    # When loading with nothing else set
    config = load(path, environ={})
    # Then the file's value wins over the default
    assert config.settings.zookeeper.session_timeout == 4.0


def test_env_overrides_toml(tmp_path: Path) -> None:
    # Given the file says 4s and the environment says 6s
    path = write_toml(tmp_path / "steward.toml", f'"{SESSION_TIMEOUT}" = "4s"\n')
    # When loading
    config = load(path, environ={SESSION_TIMEOUT_ENV: "6s"})
    # Then the environment wins
    assert config.settings.zookeeper.session_timeout == 6.0


def test_dash_d_overrides_env_and_toml(tmp_path: Path) -> None:
    # Given the file says 4s, the environment 6s and -D 8s
    path = write_toml(tmp_path / "steward.toml", f'"{SESSION_TIMEOUT}" = "4s"\n')
    overrides = parse_overrides([f"{SESSION_TIMEOUT}=8s"])
    # When loading
    config = load(path, overrides=overrides, environ={SESSION_TIMEOUT_ENV: "6s"})
    # Then -D wins
    assert config.settings.zookeeper.session_timeout == 8.0


def test_each_source_only_overrides_the_keys_it_sets(tmp_path: Path) -> None:
    # Given each source sets a different key
    path = write_toml(tmp_path / "steward.toml", f'"{QUORUM}" = "zk1:2181,zk2:2181"\n')
    environ = {SESSION_TIMEOUT_ENV: "3s"}
    overrides = {CLUSTER_ID: "prod"}
    # When loading
    config = load(path, overrides=overrides, environ=environ)
    # Then every key comes from the one source that set it
    assert config.settings.zookeeper.quorum == "zk1:2181,zk2:2181"
    assert config.settings.zookeeper.session_timeout == 3.0
    assert config.settings.zookeeper.cluster_root == "/steward/prod"


def test_steward_config_env_names_the_file(tmp_path: Path) -> None:
    # Given STEWARD_CONFIG points at a file elsewhere
    path = write_toml(tmp_path / "elsewhere.toml", f'"{CLUSTER_ID}" = "from-env-file"\n')
    # When loading without an explicit file
    config = load(environ={"STEWARD_CONFIG": str(path)})
    # Then that file is read
    assert config[CLUSTER_ID] == "from-env-file"


def test_steward_toml_in_working_directory_is_read(_isolated_cwd: Path) -> None:
    # Given a steward.toml in the working directory
    write_toml(_isolated_cwd / "steward.toml", f'"{CLUSTER_ID}" = "from-cwd"\n')
    # When loading without naming a file
    config = load(environ={})
    # Then it is used
    assert config[CLUSTER_ID] == "from-cwd"


def test_local_cluster_config_is_read_only_without_another_file(_isolated_cwd: Path) -> None:
    # Given the steward.toml a local cluster wrote into ./.steward
    (_isolated_cwd / ".steward").mkdir()
    write_toml(_isolated_cwd / ".steward" / "steward.toml", f'"{CLUSTER_ID}" = "local"\n')
    # When loading without naming a file, it is used
    assert load(environ={})[CLUSTER_ID] == "local"
    # But a ./steward.toml, STEWARD_CONFIG or --config wins over it
    other = write_toml(_isolated_cwd / "other.toml", f'"{CLUSTER_ID}" = "named"\n')
    assert load(environ={"STEWARD_CONFIG": str(other)})[CLUSTER_ID] == "named"
    assert load(other, environ={})[CLUSTER_ID] == "named"
    write_toml(_isolated_cwd / "steward.toml", f'"{CLUSTER_ID}" = "from-cwd"\n')
    assert load(environ={})[CLUSTER_ID] == "from-cwd"


def test_with_overrides_changes_only_the_overridden_key() -> None:
    # Given a configuration with explicit durations
    config = load(
        overrides={SESSION_TIMEOUT: "4s", "high-availability.zookeeper.connection-timeout": "6s"},
        environ={},
    )
    # When overriding another key
    changed = config.with_overrides({CLUSTER_ID: "other"})
    # Then that key changes and the already-parsed durations keep their values
    assert changed.settings.zookeeper.cluster_root == "/steward/other"
    assert changed.settings.zookeeper.session_timeout == 4.0
    assert changed.settings.zookeeper.connection_timeout == 6.0
    # And the original is untouched
    assert config.settings.zookeeper.cluster_root == "/steward/default"


def test_with_overrides_validates_the_new_value() -> None:
    # Given a loaded configuration
    config = load(environ={})
    # When overriding a duration with a good and with a bad value
    assert config.with_overrides({SESSION_TIMEOUT: "2s"}).settings.zookeeper.session_timeout == 2.0
    # Then the bad one is rejected naming the key
    with pytest.raises(ConfigurationError) as caught:
        config.with_overrides({SESSION_TIMEOUT: "soon"})
    assert caught.value.key == SESSION_TIMEOUT


# ---------------------------------------------------------------- toml shapes


def test_nested_toml_tables_are_flattened_to_keys(tmp_path: Path) -> None:
    # Given keys spelled as nested tables
    path = write_toml(
        tmp_path / "steward.toml",
        "[high-availability]\n"
        'cluster-id = "nested"\n'
        "[high-availability.zookeeper]\n"
        'quorum = "zk1:2181"\n'
        'session-timeout = "2m"\n'
        "tolerate-suspended-connections = false\n"
        "[state.checkpoints]\n"
        "num-retained = 5\n",
    )
    # When loading
    config = load(path, environ={})
    # Then they are read like the flat keys
    assert config.settings.zookeeper.cluster_root == "/steward/nested"
    assert config.settings.zookeeper.quorum == "zk1:2181"
    assert config.settings.zookeeper.session_timeout == 120.0
    assert config.settings.zookeeper.tolerate_suspended is False
    assert config.settings.storage.checkpoints_retained == 5


def test_flat_and_nested_keys_mix_in_one_file(tmp_path: Path) -> None:
    # Given one key flat at the top and another in a nested table
    path = write_toml(
        tmp_path / "steward.toml",
        f'"{CLUSTER_ID}" = "flat"\n[high-availability.zookeeper]\nroot = "/apps/steward"\n',
    )
    # When reading the file
    flat = read_toml(path)
    # Then both become flat keys
    assert flat == {CLUSTER_ID: "flat", "high-availability.zookeeper.root": "/apps/steward"}
    assert load(path, environ={}).settings.zookeeper.cluster_root == "/apps/steward/flat"


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    # Given a file with a syntax error
    path = write_toml(tmp_path / "broken.toml", "this is = = not toml\n")
    # When loading it
    # Then the error names the file
    with pytest.raises(ConfigurationError, match=r"broken\.toml"):
        load(path, environ={})


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    # Given a path to nothing
    # When loading it
    # Then the error names the file instead of silently using defaults
    with pytest.raises(ConfigurationError, match="does not exist"):
        load(tmp_path / "nope.toml", environ={})


# ---------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("4s", 4.0),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1.5s", 1.5),
        (" 3 s ", 3.0),
        ("1500", 1.5),
    ],
)
def test_durations_parse_with_units_and_bare_numbers_are_milliseconds(
    text: str, seconds: float
) -> None:
    # Given a duration as text / When parsing it / Then it is that many seconds
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(("raw", "seconds"), [("500ms", 0.5), ("4s", 4.0), ("2m", 120.0)])
def test_duration_keys_accept_units_from_every_source(
    tmp_path: Path, raw: str, seconds: float
) -> None:
    # Given the same duration through the file, the environment and -D
    path = write_toml(tmp_path / "steward.toml", f'"{SESSION_TIMEOUT}" = "{raw}"\n')
    # When loading each / Then each gives the same seconds
    assert load(path, environ={}).settings.zookeeper.session_timeout == pytest.approx(seconds)
    assert load(
        environ={SESSION_TIMEOUT_ENV: raw}
    ).settings.zookeeper.session_timeout == pytest.approx(seconds)
    assert load(
        overrides={SESSION_TIMEOUT: raw}, environ={}
    ).settings.zookeeper.session_timeout == pytest.approx(seconds)


def test_bare_toml_integer_duration_is_milliseconds(tmp_path: Path) -> None:
    # Given a duration written as a bare TOML integer
    path = write_toml(tmp_path / "steward.toml", f'"{SESSION_TIMEOUT}" = 2500\n')
    # When loading / Then it is read as milliseconds
    assert load(path, environ={}).settings.zookeeper.session_timeout == pytest.approx(2.5)


@pytest.mark.parametrize("seconds", [0.25, 1.0, 4.0, 90.0, 120.0])
def test_formatted_durations_parse_back(seconds: float) -> None:
    # Given a duration in seconds / When formatting and parsing it / Then it is unchanged
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)


# ---------------------------------------------------------------- rejection


def test_unknown_key_is_rejected_naming_the_key_and_its_source(tmp_path: Path) -> None:
    # Given a toml with a misspelt key
    path = write_toml(tmp_path / "steward.toml", '"high-availability.zookeper.quorum" = "x:1"\n')
    # When loading
    with pytest.raises(ConfigurationError) as caught:
        load(path, environ={})
    # Then the error names the key and the file it came from
    assert caught.value.key == "high-availability.zookeper.quorum"
    assert "high-availability.zookeper.quorum" in str(caught.value)
    assert "steward.toml" in str(caught.value)


def test_unknown_dash_d_key_is_rejected() -> None:
    # Given -D with a key that does not exist / When loading / Then it is named as from -D
    with pytest.raises(ConfigurationError, match=r"'no.such.key' \(from -D\)") as caught:
        load(overrides={"no.such.key": "1"}, environ={})
    assert caught.value.key == "no.such.key"


def test_unknown_key_read_is_rejected() -> None:
    # Given a loaded configuration / When reading a key that does not exist / Then it raises
    with pytest.raises(ConfigurationError) as caught:
        load(environ={})["no.such.key"]
    assert caught.value.key == "no.such.key"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (SESSION_TIMEOUT, "soon"),
        (SESSION_TIMEOUT, "4 weeks"),
        (SESSION_TIMEOUT, "0s"),
        (SESSION_TIMEOUT, True),
        (SESSION_TIMEOUT, [1]),
        ("high-availability.zookeeper.connection-timeout", "-1s"),
        (QUORUM, "zk1"),
        (QUORUM, "zk1:2181,zk2:notaport"),
        (QUORUM, "zk1:70000"),
        ("high-availability.zookeeper.root", "steward"),
        ("high-availability.zookeeper.root", "/steward/"),
        ("high-availability.zookeeper.root", "/a//b"),
        (CLUSTER_ID, "has space"),
        (CLUSTER_ID, "a/b"),
        (CLUSTER_ID, ""),
        ("high-availability.zookeeper.tolerate-suspended-connections", "maybe"),
        ("state.checkpoints.num-retained", "0"),
        ("state.checkpoints.num-retained", "three"),
        ("state.checkpoints.num-retained", 2.5),
        (STORAGE_DIR, ["file:///x"]),
        ("heartbeat.idle-hold", "21s"),
        ("heartbeat.idle-hold", "0s"),
        ("jobmanager.trusted-proxies", "*"),
        ("jobmanager.trusted-proxies", "proxy.example.com"),
        ("jobmanager.trusted-proxies", "10.0.0.5,10.0.0.300"),
    ],
)
def test_bad_value_is_rejected_naming_the_key(key: str, value: object) -> None:
    # Given a bad value for a known key
    # When loading it through -D
    with pytest.raises(ConfigurationError) as caught:
        load(overrides={key: value}, environ={})
    # Then the error names the key, so the user knows what to fix
    assert caught.value.key == key
    assert key in str(caught.value)


def test_bad_env_value_is_rejected_naming_the_key() -> None:
    # Given a bad value in the environment / When loading / Then the key is named
    with pytest.raises(ConfigurationError) as caught:
        load(environ={SESSION_TIMEOUT_ENV: "whenever"})
    assert caught.value.key == SESSION_TIMEOUT


@pytest.mark.parametrize("pair", ["no-equals-sign", "=value", "  =x"])
def test_malformed_dash_d_is_rejected(pair: str) -> None:
    # Given a -D argument that is not key=value / When parsing / Then it is an error
    with pytest.raises(ConfigurationError, match="key=value"):
        parse_overrides([pair])


def test_dash_d_value_may_contain_equals_signs() -> None:
    # Given a value with '=' in it / When parsing / Then only the first '=' splits
    assert parse_overrides(["a.b=x=y"]) == {"a.b": "x=y"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("yes", True), ("off", False), ("TRUE", True), ("0", False), (False, False)],
)
def test_booleans_accept_common_spellings(raw: object, expected: bool) -> None:
    key = "high-availability.zookeeper.tolerate-suspended-connections"
    assert load(overrides={key: raw}, environ={}).settings.zookeeper.tolerate_suspended is expected


# ---------------------------------------------------------------- storage dir


def test_relative_file_storage_dir_is_resolved_against_the_working_directory(
    _isolated_cwd: Path,
) -> None:
    # Given a relative file:// storage dir
    # When loading in a known working directory
    config = load(overrides={STORAGE_DIR: "file://./data/blobs"}, environ={})
    # Then it becomes an absolute file:// URL under that directory
    assert config.settings.storage.storage_dir == f"file://{_isolated_cwd.resolve()}/data/blobs"


def test_bare_relative_storage_path_becomes_a_file_url(_isolated_cwd: Path) -> None:
    config = load(overrides={STORAGE_DIR: "blobs"}, environ={})
    assert config.settings.storage.storage_dir == f"file://{_isolated_cwd.resolve()}/blobs"


def test_default_storage_dir_is_absolute(_isolated_cwd: Path) -> None:
    assert (
        load(environ={}).settings.storage.storage_dir
        == f"file://{_isolated_cwd.resolve()}/.steward/storage"
    )


@pytest.mark.parametrize("url", ["file:///srv/steward", "s3://bucket/steward", "hdfs://nn/x"])
def test_absolute_and_remote_storage_urls_are_kept(url: str) -> None:
    assert load(overrides={STORAGE_DIR: url}, environ={}).settings.storage.storage_dir == url


def test_configuration_is_a_snapshot_of_its_values() -> None:
    # Given a configuration built from a dict / When the dict changes / Then it does not
    values = load(environ={}).as_dict()
    config = Configuration(values)
    values[CLUSTER_ID] = "changed"
    assert config[CLUSTER_ID] == "default"


def test_an_idle_hold_shorter_than_the_interval_is_rejected_naming_both() -> None:
    with pytest.raises(ConfigurationError) as caught:
        load(overrides={"heartbeat.interval": "5s", "heartbeat.idle-hold": "2s"}, environ={})
    assert caught.value.key == "heartbeat.idle-hold"
    assert "heartbeat.interval" in str(caught.value)


def test_a_progress_interval_shorter_than_the_interval_is_rejected_naming_both() -> None:
    with pytest.raises(ConfigurationError) as caught:
        load(
            overrides={
                "heartbeat.interval": "5s",
                "heartbeat.idle-hold": "10s",
                "heartbeat.progress-interval": "2s",
            },
            environ={},
        )
    assert caught.value.key == "heartbeat.progress-interval"
    assert "heartbeat.interval" in str(caught.value)

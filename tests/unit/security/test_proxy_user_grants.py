"""``security.proxy-users`` (issue 27 part 2): who may run a job's driver as which OS user.

The JobManager's check (:mod:`steward.security.proxy_users`), the key's parsing, and the
TaskManager's half that needs no root (:mod:`steward.taskmanager.proxy_users`): its own list,
the environment a proxy user's driver gets. Switching users itself is tested for real in
tests/e2e/cluster/test_proxy_user.py.
"""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from steward.config import load
from steward.errors import ConfigurationError
from steward.security.identity import ANONYMOUS_ADMIN, Identity
from steward.security.proxy_users import ProxyUserRefusedError, check_proxy_user
from steward.supervisor.os_user import OsUser
from steward.taskmanager.proxy_users import ProxyUserError, driver_env, resolve
from steward.wire.jobs import JobSpec
from steward.wire.tokens import Role

GRANTS = (("etl", "alice"), ("etl", "team:data"), ("reports", "*"))
ALICE = Identity("alice", Role.SUBMITTER)
BOB = Identity("bob", Role.SUBMITTER, teams=frozenset({"data"}))
CAROL = Identity("carol", Role.ADMIN, teams=frozenset({"ops"}))


@pytest.mark.parametrize(
    ("caller", "user"),
    [(ALICE, "etl"), (BOB, "etl"), (CAROL, "reports"), (ANONYMOUS_ADMIN, "reports")],
)
def test_a_caller_granted_the_user_by_name_team_or_star_may_submit_as_it(
    caller: Identity, user: str
) -> None:
    check_proxy_user(caller, user, GRANTS)


@pytest.mark.parametrize(("caller", "user"), [(CAROL, "etl"), (ALICE, "root"), (BOB, "ops")])
def test_a_caller_not_granted_the_user_is_refused_admins_too(caller: Identity, user: str) -> None:
    with pytest.raises(ProxyUserRefusedError, match=f"may not run jobs as OS user '{user}'"):
        check_proxy_user(caller, user, GRANTS)


def test_no_proxy_user_needs_no_grant() -> None:
    check_proxy_user(CAROL, None, ())


def test_the_key_parses_pairs_and_refuses_what_is_not_one() -> None:
    config = load(environ={}, overrides={"security.proxy-users": "etl=alice, etl=team:data"})
    assert config.settings.security.proxy_users == (("etl", "alice"), ("etl", "team:data"))
    for bad in ("Etl=alice", "etl=", "etl=team:", "etl"):
        with pytest.raises(ConfigurationError, match=r"security\.proxy-users"):
            load(environ={}, overrides={"security.proxy-users": bad})


def test_a_spec_names_a_valid_os_user_and_no_requirements() -> None:
    assert JobSpec(job_id="j", proxy_user="etl").proxy_user == "etl"
    with pytest.raises(ValidationError, match="proxy_user"):
        JobSpec(job_id="j", proxy_user="../root")
    with pytest.raises(ValidationError, match="cannot name requirements"):
        JobSpec(job_id="j", proxy_user="etl", requirements=["six"])


def test_a_taskmanager_runs_only_users_its_own_list_grants() -> None:
    with pytest.raises(ProxyUserError, match="does not list it") as refused:
        resolve("etl", (("reports", "*"),))
    assert refused.value.permanent  # type: ignore[attr-defined]


@pytest.mark.skipif(os.geteuid() != 0, reason="the checks past the list need root")
def test_a_missing_user_and_root_are_refused_for_good() -> None:
    with pytest.raises(ProxyUserError, match="no OS user 'stw-no-such-user'"):
        resolve("stw-no-such-user", (("stw-no-such-user", "*"),))
    with pytest.raises(ProxyUserError, match="is root"):
        resolve("root", (("root", "*"),))


def test_the_drivers_environment_keeps_no_secret_of_the_taskmanagers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STEWARD_TOKEN", "stw_admin")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    monkeypatch.setenv("SPARK_AUTH_SECRET", "s3cret")
    monkeypatch.setenv("SPARK_HOME", "/opt/spark")
    monkeypatch.setenv("PATH", "/usr/bin")
    user = OsUser("etl", 1234, 1234, (1234,), "/home/etl")
    env = driver_env(user, {"DB_PASSWORD": "the job's own"})
    assert env["SPARK_HOME"] == "/opt/spark" and env["PATH"] == "/usr/bin"
    assert env["HOME"] == "/home/etl" and env["USER"] == env["LOGNAME"] == "etl"
    assert env["DB_PASSWORD"] == "the job's own"
    for secret in ("STEWARD_TOKEN", "AWS_SECRET_ACCESS_KEY", "SPARK_AUTH_SECRET"):
        assert secret not in env

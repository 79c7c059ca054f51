"""Rate limits over HTTP (issue 27 part 4): real JobManagers, real ZooKeeper, real sockets.

Each client binds its own loopback source address (127.0.0.2, 127.0.0.3...), so one test has
several "machines": the limits count by source address, and a guesser's address must not
lock out anyone else's. Every test here fails without the limiter: the guesses stay 401, the
flood stays 201, the valid token from the guesser's address is 200.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest
from jobmanager_harness import JobManagerCluster, PretendTaskManager, submission

from steward.jobmanager.manager import JobManager
from steward.security import tokens
from steward.security.source_address import FORWARDED_FOR, FORWARDED_PROOF
from steward.wire.patterns import MAX_BATCH
from support import wait_until

pytestmark = pytest.mark.zookeeper

FAILURES = 5
LIMITS = {
    "security.rate-limits.auth-failures.per-address": FAILURES,
    "security.rate-limits.auth-failures.per-credential": FAILURES,
    "security.rate-limits.auth-failures.window": "10m",
    "security.rate-limits.submissions.per-team": MAX_BATCH,
    "security.rate-limits.submissions.window": "10m",
}


@contextmanager
def client_from(address: str, token: str | None = None) -> Iterator[httpx.Client]:
    """An HTTP client whose connections come from ``address`` (a loopback address)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    transport = httpx.HTTPTransport(local_address=address)
    with httpx.Client(transport=transport, headers=headers, timeout=15.0) as client:
        yield client


def new_token(cluster: JobManagerCluster, leader: JobManager, name: str, role: str) -> str:
    """A new token, asked again as a client does after a 503 (the leader's ZooKeeper
    connection dropped under load: the write's outcome unknown), under a fresh name each time
    so that a first write that did land is not a conflict."""
    tries = iter(range(1_000))

    def created() -> httpx.Response | None:
        attempt = next(tries)
        body = {"name": name if attempt == 0 else f"{name}-{attempt}", "role": role}
        answer = cluster.post(leader, "/v1/tokens", body)
        return None if answer.status_code == 503 else answer

    answer = wait_until(created, 30, message="a token created")
    assert answer.status_code == 201, answer.text
    token: str = answer.json()["token"]
    return token


def guess(token: str) -> str:
    """A token shaped like ``token`` (same id) with a whole secret of its own, never the
    right one. (Cutting the token at its last ``_`` kept the head of a secret that holds one,
    base64url's, and guessed its tail: a one-character tail was right one time in 64.)"""
    parsed = tokens.parse(token)
    assert parsed is not None, "a Steward token"
    while True:
        secret = secrets.token_urlsafe(len(parsed.secret))[: len(parsed.secret)]
        if secret != parsed.secret:
            return f"{tokens.PREFIX}{parsed.id}_{secret}"


def guess_until_refused(jm: JobManager, address: str, token: str) -> list[int]:
    """A guessing loop from ``address``: the statuses it got, up to its first 429."""
    statuses: list[int] = []
    with client_from(address) as client:
        for _ in range(FAILURES * 3):
            answer = client.get(
                jm.address + "/v1/jobs", headers={"authorization": f"Bearer {guess(token)}"}
            )
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                assert int(answer.headers["retry-after"]) >= 1
                assert answer.json()["code"] == "rate_limited"
                break
    return statuses


def limited_total(cluster: JobManagerCluster, jm: JobManager, kind: str) -> float:
    text = cluster.get(jm, "/metrics").text
    for line in text.splitlines():
        if line.startswith(f'steward_rate_limited_total{{kind="{kind}"}}'):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no steward_rate_limited_total for {kind}")


def test_a_token_guessing_loop_gets_429s_and_never_a_valid_token(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader(**LIMITS)
    token = new_token(cluster, leader, "victim", "viewer")

    statuses = guess_until_refused(leader, "127.0.0.2", token)

    assert statuses == [401] * FAILURES + [429]
    with client_from("127.0.0.2", token) as guesser:
        # The right guess at last: refused like the wrong ones, so the loop learns nothing.
        assert guesser.get(leader.address + "/v1/jobs").status_code == 429
    with client_from("127.0.0.3", token) as owner:
        assert owner.get(leader.address + "/v1/jobs").status_code == 200
    assert limited_total(cluster, leader, "auth-address") >= 2


def test_one_bad_credential_sent_again_and_again_is_refused_from_any_address(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader(**LIMITS)
    revoked = guess(new_token(cluster, leader, "someone", "viewer"))
    statuses = []
    for n in range(FAILURES + 1):
        with client_from(f"127.0.1.{n + 1}", revoked) as client:
            statuses.append(client.get(leader.address + "/v1/jobs").status_code)

    assert statuses == [401] * FAILURES + [429]
    assert limited_total(cluster, leader, "auth-credential") == 1


def test_probes_and_the_internal_credential_are_never_limited(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader(**LIMITS)
    token = new_token(cluster, leader, "victim", "viewer")
    tm = PretendTaskManager(cluster, "tm-1").register()

    # The harness's own address, which the pretend TaskManager heartbeats from.
    assert guess_until_refused(leader, "127.0.0.1", token)[-1] == 429

    assert cluster.get(leader, "/v1/jobs").status_code == 429  # the admin's token too
    assert cluster.get(leader, "/healthz").status_code == 200
    assert cluster.get(leader, "/readyz").status_code == 200
    for _ in range(3):
        tm.heartbeat(leader)  # asserts 200


def test_a_flood_of_one_callers_submissions_gets_429_while_another_callers_are_answered(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader(**LIMITS)
    flooder = new_token(cluster, leader, "flooder", "submitter")
    other = new_token(cluster, leader, "other", "submitter")
    batch = {"submissions": [submission(f"flood-{n}") for n in range(MAX_BATCH)]}
    with client_from("127.0.0.2", flooder) as client:
        first = client.post(leader.address + "/v1/jobs/batch", json=batch)
        assert first.status_code == 200, first.text
        assert {item["status"] for item in first.json()["results"]} == {201}

        def flood(n: int) -> httpx.Response:
            return client.post(leader.address + "/v1/jobs", json=submission(f"more-{n}"))

        with ThreadPoolExecutor(max_workers=8) as pool:
            flooding = pool.map(flood, range(40))
            with client_from("127.0.0.3", other) as calm:
                for n in range(5):
                    mine = calm.post(leader.address + "/v1/jobs", json=submission(f"calm-{n}"))
                    assert mine.status_code == 201, mine.text
                    assert calm.get(leader.address + f"/v1/jobs/calm-{n}").status_code == 200
            answers = list(flooding)

    assert {answer.status_code for answer in answers} == {429}
    assert all(int(answer.headers["retry-after"]) >= 1 for answer in answers)
    assert cluster.get(leader, "/v1/jobs/more-0").status_code == 404  # nothing stored
    assert limited_total(cluster, leader, "submissions") == 40


def test_a_batch_past_the_share_is_refused_whole(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader(**LIMITS)
    token = new_token(cluster, leader, "batcher", "submitter")
    with client_from("127.0.0.2", token) as client:
        for n in range(MAX_BATCH // 2):
            answer = client.post(leader.address + "/v1/jobs", json=submission(f"one-{n}"))
            assert answer.status_code == 201, answer.text
        batch = {"submissions": [submission(f"many-{n}") for n in range(MAX_BATCH // 2 + 1)]}
        refused = client.post(leader.address + "/v1/jobs/batch", json=batch)

    assert refused.status_code == 429, refused.text
    assert int(refused.headers["retry-after"]) >= 1
    assert cluster.get(leader, "/v1/jobs/many-0").status_code == 404


def test_the_ui_login_form_is_limited(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader(**LIMITS)
    token = new_token(cluster, leader, "browser", "viewer")

    def sign_in(client: httpx.Client, attempt: str) -> httpx.Response:
        return client.post(leader.address + "/ui/login", data={"token": attempt})

    with client_from("127.0.0.2") as guesser:
        statuses = [sign_in(guesser, guess(token)).status_code for _ in range(FAILURES)]
        right = sign_in(guesser, token)
    assert statuses == [401] * FAILURES
    assert right.status_code == 429
    assert int(right.headers["retry-after"]) >= 1
    assert "steward_token" not in right.headers.get("set-cookie", "")
    with client_from("127.0.0.3") as owner:
        signed_in = sign_in(owner, token)
    assert signed_in.status_code == 303
    assert "steward_token=" in signed_in.headers["set-cookie"]


def test_a_standby_forward_counts_under_the_clients_address_not_the_standbys(
    cluster: JobManagerCluster,
) -> None:
    leader = cluster.start_leader(**LIMITS)
    standby = cluster.start("jm-2", **LIMITS)
    cluster.wait_knows_leader(standby, leader)
    token = new_token(cluster, leader, "forwarded", "submitter")
    # The leader stops taking anything from the standby's own address (127.0.0.1)...
    assert guess_until_refused(leader, "127.0.0.1", token)[-1] == 429
    # ...and from 127.0.0.3, the other client's.
    assert guess_until_refused(leader, "127.0.0.3", token)[-1] == 429

    with client_from("127.0.0.2", token) as client:
        answer = client.post(standby.address + "/v1/jobs", json=submission("via-standby"))
    assert answer.status_code == 201, answer.text
    with client_from("127.0.0.3", token) as client:
        refused = client.post(standby.address + "/v1/jobs", json=submission("refused"))
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    # A client that names another address itself, without a cluster member's proof, is
    # counted under its own.
    with client_from("127.0.0.1", token) as forger:
        forged = forger.post(
            leader.address + "/v1/jobs",
            json=submission("forged"),
            headers={FORWARDED_FOR: "127.0.0.9:1", FORWARDED_PROOF: "0" * 64},
        )
    assert forged.status_code == 429


def test_a_limit_of_zero_is_off(cluster: JobManagerCluster) -> None:
    off = {key: 0 for key in LIMITS if not key.endswith("window")}
    leader = cluster.start_leader(**off)
    token = new_token(cluster, leader, "victim", "viewer")
    statuses = guess_until_refused(leader, "127.0.0.2", token)
    assert statuses == [401] * (FAILURES * 3)


def guesses_from(jm: JobManager, address: str, token: str, forwarded_for: list[str]) -> list[int]:
    """One guess from ``address`` per entry of ``forwarded_for``, each claiming in
    ``X-Forwarded-For`` to be forwarded for that client: the statuses."""
    with client_from(address) as client:
        return [
            client.get(
                jm.address + "/v1/jobs",
                headers={"authorization": f"Bearer {guess(token)}", "x-forwarded-for": client_ip},
            ).status_code
            for client_ip in forwarded_for
        ]


def test_a_guesser_on_localhost_cannot_choose_its_address_with_x_forwarded_for(
    cluster: JobManagerCluster,
) -> None:
    # uvicorn's default believes X-Forwarded-For from 127.0.0.1: each guess would then count
    # under an address of its own choosing, and the limit would never trip.
    leader = cluster.start_leader(**LIMITS)
    token = new_token(cluster, leader, "victim", "viewer")
    claimed = [f"198.51.100.{n}" for n in range(1, FAILURES + 2)]
    assert guesses_from(leader, "127.0.0.1", token, claimed) == [401] * FAILURES + [429]


def test_a_trusted_proxy_forwards_each_clients_own_address(cluster: JobManagerCluster) -> None:
    leader = cluster.start_leader(**LIMITS, **{"jobmanager.trusted-proxies": "127.0.0.4"})
    token = new_token(cluster, leader, "victim", "viewer")
    guesser = ["198.51.100.1"] * (FAILURES + 1)
    assert guesses_from(leader, "127.0.0.4", token, guesser) == [401] * FAILURES + [429]
    # The proxy's other client is not locked out with the guesser...
    with client_from("127.0.0.4", token) as proxy:
        other = proxy.get(leader.address + "/v1/jobs", headers={"x-forwarded-for": "198.51.100.2"})
        assert other.status_code == 200
    # ...and the guesser's address is refused through the proxy, its own token included.
    with client_from("127.0.0.4", token) as proxy:
        again = proxy.get(leader.address + "/v1/jobs", headers={"x-forwarded-for": "198.51.100.1"})
        assert again.status_code == 429

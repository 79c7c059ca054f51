"""Property-based fuzzing of a real JobManager's REST API from its own /openapi.json.

schemathesis generates requests for every operation the OpenAPI document declares, valid
ones (positive) and ones that break the schema (negative), with a fixed seed; every answer
must be no 5xx, a status code, content type, headers and body the document declares, and a
4xx for data that breaks the schema. Failures are collected over the whole run (not stopped
at the first) and reported together, with how to replay each.

The short run is in the default suite; ``-m slow`` runs the long one (the figures in
docs/security.md come from it: ``pytest -m slow -s -k fuzz``). Requests carry the testing
kit's credentials when the cluster has REST authentication (``cluster.headers`` or
``$STEWARD_TOKEN``); without credentials, every route but ``/healthz`` and ``/readyz`` must
answer 401 once authentication exists (skipped, saying so, while the server answers without).
The default run draws its requests once (drawing costs more than sending them) and sends
that corpus with credentials and without.
"""

from __future__ import annotations

import collections
import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from e2e.bad_input.hostile import (
    assert_nothing_stored,
    auth_headers,
    each_jobmanager,
    stored_state,
)
from steward.security.credentials import INTERNAL_KEY
from steward.testing.processes import ProcessCluster

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis (a dev dependency)")
hypothesis = pytest.importorskip("hypothesis")

from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

# The corpus is drawn in the test process (schemathesis over hypothesis, ~20 CPU-s): two runs
# of the suite at once (load 17) spent the suite's 300 s on drawing it alone.
pytestmark = [pytest.mark.zookeeper, pytest.mark.timeout(600)]

SEED = 1313
STREAM = "text/event-stream"
SHORT_EXAMPLES = 12
"""Per operation and generation mode in the default suite (about 300 requests)."""
LONG_EXAMPLES = int(os.environ.get("STEWARD_FUZZ_EXAMPLES", "100"))
"""Per operation and mode in the slow run, against the leader and the standby (~4 min)."""
PUBLIC = {"/healthz", "/readyz"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@dataclass
class FuzzReport:
    operations: int = 0
    examples: int = 0
    statuses: collections.Counter[int] = field(default_factory=collections.Counter)
    by_operation: dict[str, collections.Counter[int]] = field(default_factory=dict)
    failures: dict[str, list[str]] = field(default_factory=dict)
    streams: list[str] = field(default_factory=list)
    """Event streams, not fuzzed here (see :func:`_streams`)."""

    def summary(self) -> str:
        lines = [
            f"operations={self.operations} examples={self.examples} streams_skipped={self.streams}"
            f" statuses={dict(sorted(self.statuses.items()))}"
            f" failing_operations={len(self.failures)}"
        ]
        for label, counts in self.by_operation.items():
            lines.append(f"  {label}: {dict(sorted(counts.items()))}")
        for label, found in self.failures.items():
            lines.append(f"  {label}: {len(found)} failing example(s); first:\n{found[0]}")
        return "\n".join(lines)


def internal_headers(cluster: ProcessCluster) -> dict[str, str]:
    """The cluster's internal credential (what a TaskManager sends on /internal/), if any."""
    path = cluster.settings.get(INTERNAL_KEY)
    if not path or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as credential:
        return {"authorization": f"Bearer {credential.read().strip()}"}


@dataclass(frozen=True)
class Batch:
    """One operation's generated requests in one generation mode."""

    operation: str
    path: str
    mode: GenerationMode
    cases: list[Any]

    @property
    def label(self) -> str:
        return f"{self.operation} [{self.mode.value}]"


@dataclass(frozen=True)
class Corpus:
    """Every operation's requests, drawn once from one OpenAPI document: the tests send the
    same corpus with credentials and without (drawing is what costs: about two thirds of a
    run's time, the server idles)."""

    batches: list[Batch]
    streams: list[str]
    """Event streams, not fuzzed here (see :func:`_streams`)."""


def generate(address: str, schema_headers: dict[str, str], examples: int) -> Corpus:
    """Draw ``examples`` requests per operation of ``address``'s OpenAPI document (read with
    ``schema_headers``) and generation mode, with the fixed seed."""
    schema = schemathesis.openapi.from_url(
        f"{address}/openapi.json", headers=schema_headers, timeout=30
    )
    batches: list[Batch] = []
    streams: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        name = f"{operation.method.upper()} {operation.path}"
        if _streams(operation):
            streams.append(name)
            continue
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            batches.append(Batch(name, operation.path, mode, _draw(operation, mode, examples)))
    return Corpus(batches, streams)


def send(
    corpus: Corpus,
    headers: dict[str, str],
    *,
    checks: list[Any] | None = None,
    internal: dict[str, str] | None = None,
) -> FuzzReport:
    """Send every request of ``corpus`` with ``headers`` (``internal`` on /internal/ routes,
    when given: the heartbeat's body is then parsed, not refused at the door); collect what
    fails."""
    report = FuzzReport(
        operations=len({batch.operation for batch in corpus.batches}),
        streams=list(corpus.streams),
    )
    for batch in corpus.batches:
        batch_checks = list(checks if checks is not None else CHECKS)
        if batch.mode is GenerationMode.NEGATIVE and checks is None:
            batch_checks.append(negative_data_rejection)
        use = internal if internal and batch.path.startswith("/internal/") else headers
        for case in batch.cases:
            if batch.mode is GenerationMode.NEGATIVE:
                case.query = sent_whole(case.query)
            _send_case(case, batch.label, use, batch_checks, report)
    return report


def sent_whole(query: dict[str, Any] | None) -> dict[str, Any] | None:
    """``query`` with every value the HTTP client would leave out sent as text: requests
    drops a parameter whose value is None or an empty list, so a negative case whose
    violation is such a parameter (an unknown one, seen with ``[]``) would reach the server
    valid, and its 200 would read as a schema-violating request accepted."""
    if not query:
        return query
    return {name: _whole(value) for name, value in query.items()}


def _whole(value: Any) -> Any:
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return [_whole(item) for item in value] or ""
    return value


def fuzz(
    address: str,
    headers: dict[str, str],
    examples: int,
    *,
    internal: dict[str, str] | None = None,
) -> FuzzReport:
    """Draw a corpus from ``address``'s document and send it there (:func:`generate`,
    :func:`send`)."""
    return send(generate(address, headers, examples), headers, internal=internal)


def _streams(operation: Any) -> bool:
    """An operation whose answer is an endless event stream (``GET /v1/events``): schemathesis
    reads every answer to its end, which a stream has not. Its parameters, its 401 and 400 and
    its events are tested in tests/e2e/cluster/test_live_events.py."""
    answers = operation.definition.raw.get("responses", {})
    return any(STREAM in (answer.get("content") or {}) for answer in answers.values())


def _draw(operation: Any, mode: GenerationMode, examples: int) -> list[Any]:
    settings = hypothesis.settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    cases: list[Any] = []

    @settings
    @hypothesis.seed(SEED)
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
    def collect(case: Any) -> None:
        cases.append(case)

    # An operation without parameters has nothing negative to generate.
    with contextlib.suppress(hypothesis.errors.Unsatisfiable):
        collect()
    return cases


def _send_case(
    case: Any, label: str, headers: dict[str, str], checks: list[Any], report: FuzzReport
) -> None:
    report.examples += 1
    try:
        response = case.call(headers=headers, timeout=60)
    except Exception as exc:  # a connection the server reset: as bad as a 5xx
        report.failures.setdefault(label, []).append(f"{exc!r}\n{case.as_curl_command()}")
        return
    report.statuses[response.status_code] += 1
    report.by_operation.setdefault(label, collections.Counter())[response.status_code] += 1
    try:
        case.validate_response(response, checks=checks, headers=headers)
    except (AssertionError, BaseExceptionGroup) as exc:
        report.failures.setdefault(label, []).append(f"{exc}\n{case.as_curl_command()}")


@pytest.fixture(scope="module")
def short_corpus(shared_cluster: ProcessCluster) -> Corpus:
    """The default run's requests, drawn from the leader's document once for the module."""
    leader = each_jobmanager(shared_cluster)[0]
    return generate(leader, auth_headers(shared_cluster), SHORT_EXAMPLES)


def test_fuzzing_the_rest_api_finds_no_5xx_and_no_schema_violation(
    cluster: ProcessCluster, short_corpus: Corpus
) -> None:
    leader = each_jobmanager(cluster)[0]
    report = send(short_corpus, auth_headers(cluster), internal=internal_headers(cluster))
    print(report.summary())
    assert report.operations >= 10, report.summary()
    assert report.streams == ["GET /v1/events"], report.summary()
    assert not report.failures, report.summary()
    assert httpx.get(f"{leader}/healthz", timeout=10).status_code == 200


@pytest.mark.slow
def test_fuzzing_the_rest_api_at_length_leader_and_standby(
    cluster: ProcessCluster,
) -> None:
    for address in each_jobmanager(cluster):
        report = fuzz(
            address, auth_headers(cluster), LONG_EXAMPLES, internal=internal_headers(cluster)
        )
        print(f"{address}: {report.summary()}")
        assert not report.failures, report.summary()


def test_unauthenticated_requests_get_only_401(
    cluster: ProcessCluster, short_corpus: Corpus
) -> None:
    leader = each_jobmanager(cluster)[0]
    if httpx.get(f"{leader}/v1/jobs", timeout=10).status_code != 401:
        pytest.skip("the JobManager answers without credentials: REST authentication is off")
    before = stored_state(cluster)

    def only_401(ctx: Any, response: Any, case: Any) -> bool | None:
        if case.operation.path in PUBLIC:
            return None
        assert response.status_code == 401, f"{response.status_code} without credentials"
        return None

    # The very requests the authenticated run sends (the same seed drew the same before).
    report = send(short_corpus, {}, checks=[only_401, not_a_server_error])
    print(report.summary())
    assert not report.failures, report.summary()
    assert_nothing_stored(cluster, before)

"""``steward queues``: the leader's queues as a table or one JSON document."""

from __future__ import annotations

import json
from typing import Any

import httpx

from unit.fake_jobmanager import FakeJobManagers
from unit.steward_cli import Run

QUEUES: dict[str, Any] = {
    "queues": [
        {
            "name": "etl",
            "guarantee": 0.6,
            "maximum": 1.0,
            "weight": 2.0,
            "running": 3,
            "waiting": 7,
            "slots_used": 3,
            "guaranteed_slots": 6.0,
            "max_slots": 10,
            "share": 0.3,
        }
    ],
    "slots": 10,
    "served_by": "jm-1",
}


def _answer(request: httpx.Request) -> httpx.Response:
    assert request.url.path == "/v1/queues"
    return httpx.Response(200, json=QUEUES)


def test_queues_shows_each_queue_s_shares_and_use(fake: FakeJobManagers, run: Run) -> None:
    fake.script.append(_answer)
    code, out, _err = run("queues")
    assert code == 0
    assert "10 slot(s) registered" in out
    row = next(line for line in out.splitlines() if "etl" in line)
    cells = [cell.strip() for cell in row.strip("│ ").split("│")]
    assert cells == ["etl", "60% (6)", "100% (10)", "2", "3", "7", "3/10", "30%"]


def test_queues_json_is_the_api_s_document(fake: FakeJobManagers, run: Run) -> None:
    fake.script.append(_answer)
    code, out, _err = run("queues", "--json")
    assert (code, json.loads(out)["queues"][0]["waiting"]) == (0, 7)

"""``leader/history`` against a real ZooKeeper: appended by each leader through its fence,
bounded, and never written by a deposed leader."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from stores_support import Contender

from steward.errors import FencedError
from steward.ha.session import Session
from steward.store.leadership import LeadershipHistoryStore
from steward.wire.records import LeadershipTerm

pytestmark = pytest.mark.zookeeper


def term_of(contender: Contender, **extra: int) -> LeadershipTerm:
    now = time.time()
    return LeadershipTerm(
        epoch=contender.fence.epoch,
        contender=contender.leadership.contender,
        address=f"http://{contender.leadership.contender}:8081",
        granted_at=now - 0.5,
        ready_at=now,
        **extra,
    )


def test_each_leader_appends_its_term_and_a_deposed_one_cannot(
    leader: Contender, session: Session, depose: Callable[[], Contender]
) -> None:
    history = LeadershipHistoryStore(session)
    assert history.terms() == []
    history.record(leader.fence, term_of(leader, jobs=3))

    successor = depose()
    LeadershipHistoryStore(successor.session).record(successor.fence, term_of(successor))
    with pytest.raises(FencedError):
        history.record(leader.fence, term_of(leader, jobs=99))

    terms = history.terms()
    assert [(t.epoch, t.contender, t.jobs) for t in terms] == [
        (leader.fence.epoch, "jm-1", 3),
        (successor.fence.epoch, "jm-2", 0),
    ]


def test_the_history_keeps_the_latest_terms_and_survives_a_corrupt_node(
    leader: Contender, session: Session
) -> None:
    history = LeadershipHistoryStore(session)
    session.client.create(session.layout.leader_history, b"{not json")
    for epoch in range(1, 6):
        history.record(leader.fence, term_of(leader).model_copy(update={"epoch": epoch}), kept=3)
    assert [t.epoch for t in history.terms()] == [3, 4, 5]
    # A leader recording its term again replaces its entry
    history.record(leader.fence, term_of(leader, jobs=7).model_copy(update={"epoch": 5}), kept=3)
    assert [(t.epoch, t.jobs) for t in history.terms()] == [(3, 0), (4, 0), (5, 7)]

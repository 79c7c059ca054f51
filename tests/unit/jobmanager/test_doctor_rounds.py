"""The leader's doctor rounds: an examination every interval while leading, none on a
standby, none sooner than one interval, a failed round not the last, none at all with 0."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from steward.errors import CoordinationError
from steward.jobmanager.doctor_rounds import DoctorRounds
from support import wait_until

INTERVAL = 0.05


class Doctor:
    def __init__(self) -> None:
        self.leading = threading.Event()
        self.examined = 0
        self.failures = 0

    def examine(self) -> None:
        self.examined += 1
        if self.failures:
            self.failures -= 1
            raise CoordinationError("zookeeper unreachable")


@pytest.fixture
def doctor() -> Iterator[Doctor]:
    yield Doctor()


def start(doctor: Doctor, interval: float = INTERVAL) -> DoctorRounds:
    rounds = DoctorRounds(interval, examine=doctor.examine, leading=doctor.leading.is_set)
    rounds.start()
    return rounds


def test_a_standby_never_examines_and_a_leader_does_every_interval(doctor: Doctor) -> None:
    rounds = start(doctor)
    try:
        threading.Event().wait(INTERVAL * 6)  # rounds come and go: none may examine
        assert doctor.examined == 0
        doctor.leading.set()
        wait_until(lambda: doctor.examined >= 3, 10, "three rounds as leader")
    finally:
        rounds.stop()
    after_stop = doctor.examined
    threading.Event().wait(INTERVAL * 4)
    assert doctor.examined == after_stop


def test_a_failed_round_is_not_the_last(doctor: Doctor) -> None:
    doctor.failures = 2
    doctor.leading.set()
    rounds = start(doctor)
    try:
        wait_until(lambda: doctor.examined >= 3 and doctor.failures == 0, 10, "rounds go on")
    finally:
        rounds.stop()


def test_the_first_round_waits_one_interval(doctor: Doctor) -> None:
    doctor.leading.set()
    rounds = start(doctor, interval=3600.0)
    try:
        threading.Event().wait(0.2)
        assert doctor.examined == 0  # a failover (a fresh leader) does not pay for a round
    finally:
        rounds.stop()


def test_zero_turns_the_rounds_off(doctor: Doctor) -> None:
    doctor.leading.set()
    rounds = start(doctor, interval=0)
    try:
        assert not any(t.name == "doctor-rounds" for t in threading.enumerate())
    finally:
        rounds.stop()
    assert doctor.examined == 0

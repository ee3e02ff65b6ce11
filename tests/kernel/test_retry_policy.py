"""The one retry policy of every conditional write, on its own: a full-jitter wait doubling
up to its cap after each lost race, each retry and the final conflict counted once."""

from __future__ import annotations

import pytest

from reservations.kernel import retries
from reservations.kernel.errors import Conflict
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.retries import MAX_ATTEMPTS, backoff, retried

pytestmark = pytest.mark.disable_socket


def test_the_longest_wait_after_each_lost_race_doubles_up_to_the_cap(monkeypatch):
    monkeypatch.setattr(retries.random, "uniform", lambda low, high: (low, high))
    assert [backoff(n) for n in range(6)] == [
        (0, 0.025), (0, 0.05), (0, 0.1), (0, 0.2), (0, 0.4), (0, 0.4),
    ]  # fmt: skip


def test_a_write_that_keeps_losing_counts_each_retry_then_the_conflict_once(emitted):
    waits: list[float] = []
    with pytest.raises(Conflict) as refused:
        retried(lambda: None, waits.append, "Create", "node node-a kept changing")
    assert refused.value.message == "node node-a kept changing; retry the request"
    assert len(waits) == MAX_ATTEMPTS
    assert emitted["CreateConflictsRetried"]["Value"] == [1.0] * MAX_ATTEMPTS
    assert emitted["CreateConflicts"]["Value"] == [1.0]


def test_a_write_that_wins_at_once_counts_nothing(emitted):
    answer = Outcome(204, "")
    assert retried(lambda: answer, pytest.fail, "Create", "node node-a kept changing") is answer
    assert emitted == {}

"""Retries as the contract allows them, against a stand-in API on 127.0.0.1: only 429, 5xx
and the two retryable 409s, after Retry-After, a bounded number of times, and a write only
with an Idempotency-Key, the same on every try."""

from __future__ import annotations

import pytest

from reservations_client import (
    Conflict,
    IdempotencyInProgress,
    InvalidRequest,
    ReservationNotActive,
    Reservations,
    RetryPolicy,
    ServerError,
    SubscriptionLimit,
    TooManyRequests,
)
from tests.client.conftest import Answer, StandIn

NODE = {"id": "node-a1", "ownerOrgId": "org-acme", "topologyGen": 1, "unitIds": [],
        "createdAt": "2026-12-01T00:00:00Z", "updatedAt": "2026-12-01T00:00:00Z"}  # fmt: skip
QUEUED = {"eventId": "evt-1", "attempt": 2, "queuedAt": "2026-12-01T00:00:00Z"}


def error(code: str) -> dict[str, str]:
    return {"error": f"the {code}", "code": code, "requestId": "req-1"}


def unavailable(seconds: str | None = None) -> Answer:
    return Answer(503, error("internal"), {"Retry-After": seconds} if seconds else {})


class Waits(list[float]):
    """The waits a client made, recorded instead of slept."""

    def policy(self, **limits: float) -> RetryPolicy:
        return RetryPolicy(sleep=self.append, jitter=lambda most: most, **limits)  # type: ignore[arg-type]


@pytest.fixture
def waits() -> Waits:
    return Waits()


def client(stand_in: StandIn, waits: Waits, **limits: float) -> Reservations:
    return Reservations(stand_in.url, "vl_test_key", retry=waits.policy(**limits))


def test_a_read_answered_503_then_200_is_tried_again(stand_in, waits):
    stand_in.answers(unavailable(), Answer(200, NODE))
    assert client(stand_in, waits).get_node("node-a1").id == "node-a1"
    assert [s.method for s in stand_in.seen] == ["GET", "GET"]
    assert waits == [0.5]  # the first backoff's ceiling (jitter fixed at its most)


def test_429_waits_for_retry_after(stand_in, waits):
    stand_in.answers(Answer(429, {"message": "Too Many Requests"}, {"Retry-After": "3"}),
                     Answer(200, NODE))  # fmt: skip
    client(stand_in, waits).get_node("node-a1")
    assert len(stand_in.seen) == 2
    assert waits == [3.0]


def test_a_post_is_retried_with_the_idempotency_key_the_client_made(stand_in, waits):
    stand_in.answers(unavailable("1"), Answer(202, QUEUED))
    queued = client(stand_in, waits).retry_webhook_delivery("wh-1", "evt-1")
    assert queued.attempt == 2
    keys = [s.headers.get("idempotency-key") for s in stand_in.seen]
    assert len(keys) == 2
    assert keys[0]
    assert keys[0] == keys[1]
    assert stand_in.seen[0].body == stand_in.seen[1].body


def test_each_call_gets_its_own_key_and_a_callers_key_is_kept(stand_in, waits):
    stand_in.answers(Answer(202, QUEUED))
    api = client(stand_in, waits)
    api.retry_webhook_delivery("wh-1", "evt-1")
    api.retry_webhook_delivery("wh-1", "evt-1")
    made = [s.headers["idempotency-key"] for s in stand_in.seen]
    assert made[0] != made[1]
    stand_in.seen.clear()
    stand_in.answers(unavailable(), Answer(409, error("subscription_limit")))
    with pytest.raises(SubscriptionLimit):
        api.create_webhook("https://hooks.example/x", idempotency_key="mine-1")
    assert [s.headers["idempotency-key"] for s in stand_in.seen] == ["mine-1", "mine-1"]


@pytest.mark.parametrize(("code", "raised"), [("conflict", Conflict),
                                              ("idempotency_in_progress", IdempotencyInProgress)])  # fmt: skip
def test_the_retryable_409s_are_tried_again(stand_in, waits, code, raised):
    stand_in.answers(Answer(409, error(code), {"Retry-After": "1"}))
    with pytest.raises(raised) as failed:
        client(stand_in, waits).get_node("node-a1")
    assert len(stand_in.seen) == 4  # bounded: the first try and three retries
    assert waits == [1.0, 1.0, 2.0]  # Retry-After, or the backoff when it is longer
    assert (failed.value.status, failed.value.request_id) == (409, "req-1")


@pytest.mark.parametrize(("answer", "raised"), [
    (Answer(409, error("reservation_not_active")), ReservationNotActive),
    (Answer(400, error("invalid_request")), InvalidRequest),
])  # fmt: skip
def test_a_decision_is_never_retried(stand_in, waits, answer, raised):
    stand_in.answers(answer)
    with pytest.raises(raised):
        client(stand_in, waits).get_node("node-a1")
    assert len(stand_in.seen) == 1
    assert waits == []


def test_tries_are_bounded_and_the_last_answer_is_raised(stand_in, waits):
    stand_in.answers(unavailable())
    with pytest.raises(ServerError) as failed:
        client(stand_in, waits, tries=3).get_node("node-a1")
    assert failed.value.status == 503
    assert len(stand_in.seen) == 3
    assert waits == [0.5, 1.0]


def test_a_retry_after_beyond_the_longest_wait_is_not_waited_for(stand_in, waits):
    stand_in.answers(Answer(429, {"message": "Too Many Requests"}, {"Retry-After": "3600"}))
    with pytest.raises(TooManyRequests) as failed:
        client(stand_in, waits).get_node("node-a1")
    assert failed.value.retry_after == 3600
    assert len(stand_in.seen) == 1
    assert waits == []


def test_backoff_doubles_up_to_its_cap_with_full_jitter():
    ceilings = RetryPolicy(tries=8, base=0.5, cap=4.0, jitter=lambda most: most)
    assert [ceilings.wait(n, None) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    assert ceilings.wait(7, None) is None
    drawn: list[float] = []
    jittered = RetryPolicy(jitter=lambda most: drawn.append(most) or most / 4)  # type: ignore[func-returns-value]
    assert jittered.wait(2, None) == 0.5
    assert drawn == [2.0]

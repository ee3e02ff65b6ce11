"""The request deadline of the functions' AWS clients: a try starts only if its worst case
(1 s to connect + 2 s to read) ends while half a second of the invocation is still left
for the answer. Without that margin, a store that hangs would let the last try end with
the invocation, and Lambda, not the contract's 503, would answer."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from botocore.hooks import HierarchicalEmitter

from reservations.kernel.aws import clients

pytestmark = pytest.mark.disable_socket


class FrozenClock:
    """``time.monotonic`` as the deadline reads it, moved by the test alone."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[FrozenClock]:
    frozen = FrozenClock()
    monkeypatch.setattr(clients.time, "monotonic", frozen)
    yield frozen
    clients.end_request()


def a_try_may_start() -> bool:
    try:
        clients._check_deadline("before-send.dynamodb.Query")
    except clients.DeadlineReached:
        return False
    return True


@pytest.mark.parametrize(
    ("seconds_left", "may_start"),
    [
        (10.0, True),
        (3.51, True),  # 3 s for the try, 0.5 s for the answer, 0.01 s to spare
        (3.5, True),  # the try would end with exactly 0.5 s left to answer
        (3.49, False),  # the try would end with less than 0.5 s left to answer
        (3.2, False),  # it would end inside the invocation, but leave no time to answer
        (3.0, False),
        (1.0, False),
    ],
)
def test_a_try_starts_only_if_half_a_second_is_left_for_the_answer_after_it(
    clock, seconds_left, may_start
):
    clients.start_request(seconds_left)
    assert a_try_may_start() is may_start


def test_the_margin_is_counted_from_the_start_of_the_request(clock):
    clients.start_request(6.0)
    assert a_try_may_start()
    clock.now += 2.49  # 3.51 s left: still time for a try and the answer
    assert a_try_may_start()
    clock.now += 0.02  # 3.49 s left
    assert not a_try_may_start()


def test_between_requests_nothing_is_bounded(clock):
    clients.start_request(1.0)
    clients.end_request()
    assert a_try_may_start()


def test_the_error_names_the_service_it_gave_up_on(clock):
    clients.start_request(3.4)
    with pytest.raises(clients.DeadlineReached, match="no time left for another sqs request"):
        clients._check_deadline("before-send.sqs.SendMessageBatch")


def test_a_try_whose_event_names_no_service_gives_up_on_aws(clock):
    clients.start_request(3.4)
    with pytest.raises(clients.DeadlineReached, match="no time left for another AWS request"):
        clients._check_deadline("before-send")


def test_the_functions_clients_check_the_deadline_before_each_try(clock):
    """On the hook botocore calls before sending each try (retries included)."""
    emitter = HierarchicalEmitter()
    clients._bounded(SimpleNamespace(meta=SimpleNamespace(events=emitter)))
    clients.start_request(3.4)
    with pytest.raises(clients.DeadlineReached, match="another sqs request"):
        emitter.emit("before-send.sqs.SendMessageBatch", request=None)

"""An event whose write answered a settle window or more after its position may have landed
behind a poller's cursor: it is written again at a newer position (a copy for the readers,
without the relay's mark), so no poller misses it; when no copy lands within the window, its
id is reported owing. Over moto, the feed writer's clock set by the test."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from reservations.events.table import feeds
from reservations.kernel.aws import clients, event_items
from reservations.kernel.aws.codec import from_attributes
from reservations.kernel.event_log import SETTLE_WINDOW, record_position
from reservations.kernel.times import to_millisecond
from reservations.nodes import node_events_pk
from tests.support import event_scenario as s

pytestmark = [pytest.mark.moto, pytest.mark.disable_socket]

TABLE = "ReservationsTable"
T = s.T0 + timedelta(minutes=1)


def clock(monkeypatch: pytest.MonkeyPatch, *times: datetime) -> None:
    """The writer's clock reads ``times`` in turn, then stays at the last."""
    readings: Iterator[datetime] = iter(times)
    last = [times[-1]]

    def read() -> datetime:
        last[0] = next(readings, last[0])
        return last[0]

    monkeypatch.setattr(event_items, "record_clock", read)


def feed(aws: Any, node_id: str) -> list[dict[str, Any]]:
    answer = aws.query(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": node_events_pk(node_id)}},
    )
    return [from_attributes(item) for item in answer["Items"]]


def test_a_write_answered_within_the_window_is_written_once(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = s.every_type()[0]
    clock(monkeypatch, T, T + SETTLE_WINDOW - timedelta(milliseconds=1))
    assert feeds.put_derived([event], 30) == set()
    [item] = feed(aws, event.event.node_id)
    assert item["SK"] == record_position(to_millisecond(T), event.id)
    assert item[event_items.UNRELAYED] == event_items.relay_mark(event.event.node_id)


def test_a_write_answered_a_window_late_is_written_again_newer_for_the_readers(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = s.every_type()[0]
    late = T + SETTLE_WINDOW
    clock(monkeypatch, T, late, late, late + timedelta(milliseconds=10))
    assert feeds.put_derived([event], 30) == set()
    first, again = sorted(feed(aws, event.event.node_id), key=lambda item: str(item["SK"]))
    assert first["SK"] == record_position(to_millisecond(T), event.id)
    assert first[event_items.UNRELAYED] == event_items.relay_mark(event.event.node_id)
    # The copy is for the readers: the relay relays the first one only.
    marks = (event_items.UNRELAYED, event_items.REVIEW)
    assert again == {k: v for k, v in first.items() if k not in marks} | {
        "SK": record_position(to_millisecond(late), event.id)
    }


def test_a_copy_that_itself_lands_late_is_written_again_until_one_is_on_time(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = s.every_type()[0]
    late, later = T + SETTLE_WINDOW, T + 2 * SETTLE_WINDOW
    clock(monkeypatch, T, late, late, later, later, later)
    assert feeds.put_derived([event], 30) == set()
    positions = sorted(str(item["SK"]) for item in feed(aws, event.event.node_id))
    assert positions == [
        record_position(to_millisecond(moment), event.id) for moment in (T, late, later)
    ]


class _RefusingPuts:
    """The client the rewrites use, every PutItem refused."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.puts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def put_item(self, **_: Any) -> None:
        self.puts += 1
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "no"}}, "PutItem")


def test_a_late_write_no_copy_of_which_lands_is_reported_owing_after_its_tries(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    event = s.every_type()[0]
    refusing = _RefusingPuts(clients.dynamodb())
    monkeypatch.setattr(event_items, "clients", SimpleNamespace(dynamodb=lambda: refusing))
    clock(monkeypatch, T, T + SETTLE_WINDOW)
    assert feeds.put_derived([event], 30) == {event.id}
    assert refusing.puts == event_items.REWRITE_TRIES
    assert len(feed(aws, event.event.node_id)) == 1

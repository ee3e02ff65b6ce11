"""A node update that puts many reservations under review, in-process over moto: the PUT is
one bounded transaction answering 200 whatever their number (10,000 on one unit; 64 units
each sold 200 times), the unit can change again afterwards, and the relay writes each
reviewed reservation's ``reservation.needs_review`` once, with the same id however often it
runs, a page at a time across invocations."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from devstack import fleet_documents as f
from devstack.api_events import create_event, node_event
from devstack.functions import FakeContext, invoke, load_function
from reservations.events.table import outlets
from reservations.events.table.feeds import pending_event_from_item
from reservations.events.table.keys import org_events_pk
from reservations.events.table.outlets import DerivedEvents
from reservations.kernel.aws import clients, event_items
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.nodes.table.keys import node_events_pk
from tests.support import event_scenario as s
from tests.support import state
from tests.support.event_table import StreamRelay

pytestmark = pytest.mark.moto

OPERATOR = "Bearer vl_local_test_node_operator"
OPERATOR_KEY = {"key": OPERATOR.removeprefix("Bearer "), "orgId": "org-platform",
                "permissions": ["node.write", "reservation.read"]}  # fmt: skip
U4, U5 = "0000:04:00.0", "0000:05:00.0"
HOUR = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("put_node", "event_relay", "org_events")
    return {name: load_function(name) for name in names}


@pytest.fixture
def node_env(aws: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    import boto3

    from devstack.fleets import NODE_QUEUE_PREFIX
    from reservations.kernel.aws import clients
    from reservations_tools.fleet.loader import local_dead_letter_arn

    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    return aws


def hourly(unit_id: str, count: int, prefix: str = "res") -> list[dict[str, Any]]:
    """``count`` pending reservations of ``unit_id``, one an hour from two hours on."""
    return [
        f.reservation(f"{prefix}-{n:05}", [unit_id], status="pending",
                      startsAt=f.iso(HOUR + timedelta(hours=n)),
                      endsAt=f.iso(HOUR + timedelta(hours=n + 1)))
        for n in range(count)
    ]  # fmt: skip


def update(gen: int, units: list[dict[str, Any]]) -> dict[str, Any]:
    return {"ownerOrgId": "org-acme", "topologyGen": gen, "units": units}


def relay_all(aws: Any, relay: ModuleType) -> None:
    """The stream until it is drained (the relay's own writes included)."""
    stream = StreamRelay(aws, relay)
    while stream.run():
        pass


def put(functions, document: dict[str, Any]) -> Any:
    return invoke(functions["put_node"], node_event("node-a", document, OPERATOR))


def node_updates(aws: Any) -> list[tuple[dict[str, Any], Any]]:
    """The node's ``node.updated`` items, each with its event as the relay takes it."""
    return [
        (item, pending_event_from_item(item).stored)
        for item in feed_items(aws)
        if item["type"] == "node.updated"
    ]


def under_review(functions, load_fleet, aws: Any, count: int) -> Any:
    """node-a with ``count`` reservations of U4, whose model a node update then changes:
    the update's event as the relay takes it (``count`` reviews to derive)."""
    load_fleet(f.fleet([f.node("node-a", [f.unit(U4), f.unit(U5)], hourly(U4, count))],
                       [OPERATOR_KEY]))  # fmt: skip
    answer = put(functions, update(2, [f.unit(U4, gpuModelId="nvidia-b200"), f.unit(U5)]))
    assert answer.status == 200, answer.body
    [(_, updated)] = node_updates(aws)
    return updated


def feed_items(aws: Any, partition: str = node_events_pk("node-a")) -> list[dict[str, Any]]:
    pages = aws.get_paginator("query").paginate(
        TableName=state.TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues=to_attributes({":pk": partition}),
        ConsistentRead=True,
    )
    return [from_attributes(i) for page in pages for i in page["Items"]]


class Ticks:
    """A clock that moves one second each time it is read: an outlet call given a budget
    of ``n`` seconds reads a few pages and stops, as a real one does at its time's end."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def derive_all(stored: Any) -> int:
    """The outlet called until it has written every review, as successive relays would
    (each a few pages); how many calls it took."""
    outlet = DerivedEvents(budget_seconds=4.0, clock=Ticks())
    for calls in range(1, 100):
        if outlet.deliver([stored]) == set():
            return calls
    raise AssertionError("the reviews were never all written")


def reviews(aws: Any) -> list[dict[str, Any]]:
    """The reviews in the node's feed as a follower keeps them: each id once. A write
    answered a settle window late is written again, a copy for the readers with the same
    id (``docs/feeds.md``); over moto on a loaded machine a transaction can take that long."""
    kept: dict[str, dict[str, Any]] = {}
    for event in state.events(aws, "node-a", event_type="reservation.needs_review"):
        kept.setdefault(event["id"], event)
    return list(kept.values())


def derived(aws: Any) -> list[str]:
    """The subjects of the reviews written as events for the relay to take (with its mark):
    one per derivation, whatever copies were written for the readers."""
    return sorted(
        json.loads(item["event"])["subject"]
        for item in feed_items(aws)
        if item["type"] == "reservation.needs_review" and event_items.UNRELAYED in item
    )


def test_10000_reviews_on_one_unit_are_a_200_each_derived_once_and_the_unit_changes_again(
    functions, node_env, load_fleet
):
    aws = node_env
    node = f.node("node-a", [f.unit(U4), f.unit(U5)], hourly(U4, 10_000))
    load_fleet(f.fleet([node], [OPERATOR_KEY]))
    first = put(functions, update(2, [f.unit(U4, gpuModelId="nvidia-b200"), f.unit(U5)]))
    assert first.status == 200, first.body
    assert first.body["topologyGen"] == 2
    [(item, updated)] = node_updates(aws)
    # The update's item is bounded by the node's units: no reservation id in it.
    assert len(json.dumps(item, default=str)) < 4_000
    assert updated.event.data["reviewedReservationCount"] == 10_000
    assert updated.event.data["changedUnitIds"] == [U4]
    # The relay derives the reviews a few pages a call, and goes on where it stopped.
    assert derive_all(updated) > 2
    written = reviews(aws)
    subjects = sorted(e["subject"] for e in written)
    assert subjects == [f"reservations/res-{n:05}" for n in range(10_000)]
    assert derived(aws) == subjects  # each derived once
    assert {e["time"] for e in written} == {json.loads(updated.event.to_json())["time"]}
    assert {tuple(e["data"]["unitIds"]) for e in written} == {(U4,)}
    again = put(functions, update(3, [f.unit(U4, gpuModelId="nvidia-h200"), f.unit(U5)]))
    assert again.status == 200, again.body
    assert again.body["topologyGen"] == 3
    # Already under review: the second update reviews none of them again.
    [later] = [stored for _, stored in node_updates(aws) if stored.event.data["topologyGen"] == 3]
    assert "reviewedReservationCount" not in later.event.data
    assert later.review is None


class StillClock:
    """A clock that moves only when slept on; each sleep it was asked for is kept."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_the_reviews_are_written_200_a_second_and_a_call_stops_at_its_time(
    functions, node_env, load_fleet
):
    """600 reviews, 99 to a transaction with its progress (100 items): one every half
    second. A call of 2 s writes four (the fifth would start at its end); the next goes on
    from there and writes the rest, 204 reviews in three (99, 99 and 6)."""
    aws = node_env
    updated = under_review(functions, load_fleet, aws, 600)
    clock = StillClock()
    outlet = DerivedEvents(budget_seconds=2.0, clock=clock, sleep=clock.sleep)

    assert outlet.deliver([updated]) == {updated.id}
    assert (len(reviews(aws)), clock.slept, clock.now) == (396, [0.5, 0.5, 0.5], 1.5)

    assert outlet.deliver([updated]) == set()  # a call of its own: its first write at once
    assert clock.slept == [0.5, 0.5, 0.5, 0.5, 0.5]
    subjects = sorted(e["subject"] for e in reviews(aws))
    assert subjects == [f"reservations/res-{n:05}" for n in range(600)]
    assert derived(aws) == subjects


def test_64_units_each_sold_200_times_change_in_one_200(functions, node_env, load_fleet):
    aws = node_env
    ids = [f"0000:{0x10 + i // 32:02x}:{i % 32:02x}.0" for i in range(64)]
    booked = [r for n, unit_id in enumerate(ids) for r in hourly(unit_id, 200, f"res-{n:02}")]
    load_fleet(f.fleet([f.node("node-a", [f.unit(u) for u in ids], booked)], [OPERATOR_KEY]))
    answer = put(functions, update(2, [f.unit(u, sellableGpus=2) for u in ids]))
    assert answer.status == 200, answer.body
    [(item, updated)] = node_updates(aws)
    assert len(json.dumps(item, default=str)) < 12_000
    assert updated.event.data["reviewedReservationCount"] == 64 * 200
    assert updated.review is not None
    assert updated.review.unit_ids == frozenset(ids)


def test_a_relay_run_again_from_the_start_writes_the_same_reviews_once_and_feeds_them(
    functions, node_env, load_fleet
):
    """250 reviews; one reservation cancelled after the update (it was live at it: its
    review stays), one re-affirmed (decided and written down: none), one on the other unit
    (none). Derived once; the stream's records handed over again write none twice, nor
    does the outlet asked again (a relay that died before its mark); the stream relay
    then feeds each to the reservations' orgs."""
    aws = node_env
    booked = [*hourly(U4, 250), *hourly(U5, 1, "other")]
    load_fleet(s.with_feed_permissions(f.fleet(
        [f.node("node-a", [f.unit(U4), f.unit(U5)], booked)], [*s.fleet_keys(), OPERATOR_KEY]
    )))  # fmt: skip
    assert put(functions, update(2, [f.unit(U4, sellable=False, notSellableReason="rma"),
                                     f.unit(U5)])).status == 200  # fmt: skip
    [(_, updated)] = node_updates(aws)
    assert updated.event.data["reviewedReservationCount"] == 250
    later = {"cancelled": "res-00007", "reaffirmed": "res-00008"}
    for status, reservation_id in later.items():
        key = to_attributes({"PK": "NODE#node-a", "SK": f"RES#{reservation_id}"})
        aws.update_item(TableName=state.TABLE, Key=key,
                        UpdateExpression="SET #s = :s, topologyGen = :g, updatedAt = :at",
                        ExpressionAttributeNames={"#s": "status"},
                        ExpressionAttributeValues=to_attributes({
                            ":s": "cancelled" if status == "cancelled" else "pending",
                            ":g": 1 if status == "cancelled" else 2,
                            ":at": f.iso(datetime.now(UTC) + timedelta(seconds=5))}))  # fmt: skip
    stream = StreamRelay(aws, functions["event_relay"])
    stream.run()  # the update, as the stream brings it
    first = reviews(aws)
    expected = sorted(f"reservations/res-{n:05}" for n in range(250) if n != 8)
    assert sorted(e["subject"] for e in first) == expected
    for records in stream.invocations[:1]:  # the update's own records, again
        functions["event_relay"].lambda_handler(records, FakeContext())
    assert DerivedEvents().deliver([updated]) == set()
    assert reviews(aws) == first
    relay_all(aws, functions["event_relay"])
    # The reservations' managers' feed holds each review once, by its id (a relay's write
    # answered a settle window late leaves a copy, as in the node's feed).
    fed = {i["eventId"] for i in feed_items(aws, org_events_pk("org-broker"))
           if i["type"] == "reservation.needs_review"}  # fmt: skip
    assert sorted(fed) == sorted(e["id"] for e in first)
    first_page = invoke(functions["org_events"], s.org_feed_event(s.bearer("manager")))
    assert first_page.status == 200
    assert all("unrelayed" not in i for i in feed_items(aws))


def test_a_relay_that_fails_partway_goes_on_from_its_last_transaction_and_writes_none_twice(
    functions, node_env, load_fleet, monkeypatch
):
    """250 reviews, three transactions (99 reviews and the progress each, then 52 and it):
    the second is refused (throttled), so the relay answers the update as not delivered;
    the next relay writes the rest, and each review is in the node's feed once."""
    aws = node_env
    updated = under_review(functions, load_fleet, aws, 250)
    real, calls = clients.dynamodb().transact_write_items, []

    def throttled_once(**request: Any) -> Any:
        calls.append(len(request["TransactItems"]))
        if len(calls) == 2:
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow"}},
                              "TransactWriteItems")  # fmt: skip
        return real(**request)

    with monkeypatch.context() as patched:
        patched.setattr(clients.dynamodb(), "transact_write_items", throttled_once)
        assert DerivedEvents().deliver([updated]) == {updated.id}
    assert len(reviews(aws)) == 99  # the first transaction's
    assert DerivedEvents().deliver([updated]) == set()
    subjects = sorted(e["subject"] for e in reviews(aws))
    assert derived(aws) == subjects == [f"reservations/res-{n:05}" for n in range(250)]


def test_a_progress_record_that_fails_after_its_reviews_landed_derives_none_twice(
    functions, node_env, load_fleet, monkeypatch
):
    """150 reviews, two transactions, each carrying the progress it makes: the first lands
    and its answer is lost, so the relay fails after its 99 reviews landed (as it did when
    the progress was an UpdateItem of its own, sent after the transaction, and refused).
    The next relay goes on from the progress the transaction recorded, and sends only the
    rest; no UpdateItem is sent."""
    aws = node_env
    updated = under_review(functions, load_fleet, aws, 150)
    real, calls, updates = clients.dynamodb().transact_write_items, [], []

    def answer_lost_once(**request: Any) -> Any:
        calls.append(len(request["TransactItems"]))
        answer = real(**request)
        if len(calls) == 1:
            raise ReadTimeoutError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
        return answer

    clock = StillClock()
    with monkeypatch.context() as patched:
        patched.setattr(clients.dynamodb(), "transact_write_items", answer_lost_once)
        patched.setattr(clients.dynamodb(), "update_item", lambda **r: updates.append(r))
        assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == {updated.id}
        assert len(reviews(aws)) == 99  # the first transaction's, landed
        assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == set()
    assert (calls, updates) == ([100, 52], [])  # 99 reviews and the progress; the rest
    subjects = sorted(e["subject"] for e in reviews(aws))
    assert subjects == [f"reservations/res-{n:05}" for n in range(150)]
    assert derived(aws) == subjects


def test_a_relay_that_read_the_progress_before_another_moved_it_writes_none(
    functions, node_env, load_fleet, monkeypatch
):
    """150 reviews, written by one relay; another of the same update read the progress
    before that (none yet): its first transaction, conditioned on what it read, is refused
    whole, its reviews with it, and the update stays owing for it (the next relay finds
    none left)."""
    aws = node_env
    updated = under_review(functions, load_fleet, aws, 150)
    clock = StillClock()
    assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == set()
    written = sorted(e["subject"] for e in reviews(aws))
    with monkeypatch.context() as patched:
        patched.setattr(outlets, "reviewed_after", lambda _: None)
        assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == {updated.id}
    assert derived(aws) == written == [f"reservations/res-{n:05}" for n in range(150)]
    assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == set()
    assert derived(aws) == written


def test_a_review_transaction_answered_late_is_copied_for_the_readers_and_derived_once(
    functions, node_env, load_fleet, monkeypatch
):
    """250 reviews, three transactions (99, 99 and 52 reviews, each with the progress it
    makes); the second answered a settle window after its position (DynamoDB slow, or moto
    on a loaded machine): its 99 reviews are written again for the feed's readers, with the
    same ids and without the relay's mark, and the outlet goes on. Each review is derived
    once: the relay takes each once, a follower keeps each once, and a relay again writes
    nothing."""
    aws = node_env
    updated = under_review(functions, load_fleet, aws, 250)
    ahead = [timedelta(0)]
    monkeypatch.setattr(event_items, "record_clock", lambda: datetime.now(UTC) + ahead[0])
    real, calls = clients.dynamodb().transact_write_items, []

    def second_late(**request: Any) -> Any:
        calls.append(len(request["TransactItems"]))
        answer = real(**request)
        if len(calls) == 2:
            ahead[0] += SETTLE_WINDOW
        return answer

    clock = StillClock()
    with monkeypatch.context() as patched:
        patched.setattr(clients.dynamodb(), "transact_write_items", second_late)
        assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == set()
    assert calls == [100, 100, 53]
    items = [i for i in feed_items(aws) if i["type"] == "reservation.needs_review"]
    copies = [i for i in items if event_items.UNRELAYED not in i]
    assert len(items) == 349
    assert sorted(json.loads(i["event"])["subject"] for i in copies) == [
        f"reservations/res-{n:05}" for n in range(99, 198)
    ]
    subjects = sorted(e["subject"] for e in reviews(aws))
    assert derived(aws) == subjects == [f"reservations/res-{n:05}" for n in range(250)]
    assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == set()
    assert len([i for i in feed_items(aws) if i["type"] == "reservation.needs_review"]) == 349


def test_a_review_transaction_no_copy_of_which_lands_in_time_keeps_its_progress(
    functions, node_env, load_fleet, monkeypatch
):
    """150 reviews; the first transaction answered a settle window late, and no copy of its
    reviews lands (every PutItem refused): its reviews stay at their first position, marked
    for the relay, and the progress they made with them. The call answers the update as
    not delivered; the next goes on past them and derives none twice."""
    aws = node_env
    updated = under_review(functions, load_fleet, aws, 150)
    ahead = [timedelta(0)]
    monkeypatch.setattr(event_items, "record_clock", lambda: datetime.now(UTC) + ahead[0])
    real, calls = clients.dynamodb().transact_write_items, []

    def first_late(**request: Any) -> Any:
        calls.append(len(request["TransactItems"]))
        answer = real(**request)
        if len(calls) == 1:
            ahead[0] += SETTLE_WINDOW
        return answer

    def refused(**_: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "no"}}, "PutItem")

    clock = StillClock()
    with monkeypatch.context() as patched:
        patched.setattr(clients.dynamodb(), "transact_write_items", first_late)
        patched.setattr(clients.dynamodb(), "put_item", refused)
        assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == {updated.id}
        assert DerivedEvents(clock=clock, sleep=clock.sleep).deliver([updated]) == set()
    assert calls == [100, 52]
    items = [i for i in feed_items(aws) if i["type"] == "reservation.needs_review"]
    assert len(items) == 150  # no copy
    assert derived(aws) == [f"reservations/res-{n:05}" for n in range(150)]


def test_a_create_that_would_pass_dynamodbs_item_size_is_a_409_naming_it_with_nothing_written(
    node_env, load_fleet
):
    """The node's list access item names every org its reservations name: creates each
    naming 50 new org ids of 128 characters bring it to 400 KB after about 2,700 of them.
    The create that would pass it is refused whole, a 409 naming the limit (no
    reservation, no event, nothing kept under its key), never a 500."""
    aws = node_env
    create = load_function("create_reservation")
    writer = {"key": "vl_local_test_writer", "orgId": "org-acme",
              "permissions": ["reservation.write", "reservation.read"]}  # fmt: skip
    load_fleet(f.fleet([f.node("node-a", [f.unit(U4)])], [writer]))
    answers = []
    for n in range(80):
        before = state.whole_table(aws)
        orgs = [f"org-{n:03}-{m:02}-" + "x" * 117 for m in range(50)]
        body = {"unitIds": [U4], "allowedOrgIds": orgs,
                "startsAt": f.iso(HOUR + timedelta(hours=n)),
                "endsAt": f.iso(HOUR + timedelta(hours=n + 1))}  # fmt: skip
        event = create_event("node-a", body, "Bearer vl_local_test_writer", f"k-{n}")
        answers.append(invoke(create, event))
        if answers[-1].status != 201:
            break
    refused = answers[-1]
    assert (refused.status, refused.body["code"]) == (409, "storage_limit"), refused.body
    assert "400 KB" in refused.body["error"]
    assert "retry-after" not in refused.headers
    assert len(answers) > 40
    access = state.item(aws, "node-a", "~ACCESS")
    assert access is not None
    assert sum(len(k) + len(str(v)) for k, v in access.items()) > 390_000
    assert state.whole_table(aws) == before  # nothing written, no key record kept

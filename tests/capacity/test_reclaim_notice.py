"""Reclaim with notice (``noticeSeconds``) over the fakes: the body, the deadline each
termination gets, the earlier deadline kept (and sent again when it moves), the answer, the
event and the message, and a dry run that writes nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import IdempotencyKeyReused, InvalidRequest
from reservations.nodes.models.partition import TerminationState, WorkloadState
from reservations.terminations import sweeper
from reservations.terminations.rules.delivery import RedeliveryPolicy
from tests.support.fakes import FakeTable, ports
from tests.support.use_cases import BROKER, NOW, QUEUE, UNITS
from tests.support.writes import reclaim, release

pytestmark = pytest.mark.disable_socket

# A real clock is never on the second: the deadline keeps the commit's milliseconds.
COMMIT = NOW + timedelta(microseconds=250_700)
AT_MS = NOW + timedelta(milliseconds=250)
POLICY = RedeliveryPolicy(
    grace=timedelta(seconds=60),
    confirm_deadline=timedelta(seconds=600),
    stuck_resend=timedelta(seconds=3600),
    max_deliveries=3,
)


def call(store, queue, clock, unit_ids, **body):
    raw = RawBody(json.dumps({"unitIds": unit_ids, **body}))
    return reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue))


def answer(store, queue, clock, unit_ids, **body):
    outcome = call(store, queue, clock, unit_ids, **body)
    assert outcome.status == 200, outcome.body
    return json.loads(outcome.body)


def workload(store: FakeTable, workload_id: str):
    return store.nodes["node-a"].workloads[workload_id]


def requested_events(store: FakeTable) -> list[dict]:
    return [
        e.event.envelope(True)["data"] | {"subject": e.event.subject}
        for e in store.events
        if e.event.type.value == "workload.termination_requested"
    ]


# --- the body -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "notice",
    [-1, 3601, 10**12, "60", True, False, 1.5, None, [60], {"s": 60}],
    ids=lambda v: repr(v),
)
def test_notice_seconds_is_a_whole_number_from_0_to_3600(store, queue, clock, notice):
    with pytest.raises(InvalidRequest) as refused:
        call(store, queue, clock, [UNITS[0]], noticeSeconds=notice)
    assert [d.field for d in refused.value.details] == ["noticeSeconds"]
    assert store.writes == 0


@pytest.mark.parametrize("notice", [0, 1, 3600, 60.0])
def test_every_notice_in_range_is_taken(store, queue, clock, notice):
    clock.now = COMMIT
    answer(store, queue, clock, [UNITS[0]], noticeSeconds=notice)
    deadline = AT_MS + timedelta(seconds=notice)
    assert workload(store, "vm-spot").termination.terminate_at == deadline


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=5,
)


def _taken(value: object) -> bool:
    """The contract's rule: a JSON integer 0-3600 (1.0 is the integer 1 to JSON)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value).is_integer() and 0 <= value <= 3600


# A dry run writes nothing, so the one store serves every example.
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(notice=JSON | st.integers(-5, 3605))
def test_any_json_as_notice_is_taken_exactly_when_the_contract_says(store, queue, clock, notice):
    raw = RawBody(json.dumps({"unitIds": [UNITS[0]], "noticeSeconds": notice, "dryRun": True}))
    call = lambda: reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue))  # noqa: E731
    if not _taken(notice):
        with pytest.raises(InvalidRequest) as refused:
            call()
        assert [d.field for d in refused.value.details] == ["noticeSeconds"]
        return
    assert call().status == 200


def test_release_takes_no_notice(store, queue, clock):
    raw = RawBody(json.dumps({"unitIds": [UNITS[0]], "noticeSeconds": 60}))
    with pytest.raises(InvalidRequest) as refused:
        release(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue))
    assert [d.field for d in refused.value.details] == ["noticeSeconds"]


def test_the_wrong_case_is_an_unknown_field_not_a_notice(store, queue, clock):
    with pytest.raises(InvalidRequest) as refused:
        call(store, queue, clock, [UNITS[0]], noticeseconds=60)
    assert [d.field for d in refused.value.details] == ["noticeseconds"]
    assert store.writes == 0


# --- the deadline, the answer, the event, the message --------------------------------------


def test_with_a_notice_the_units_leave_at_once_and_the_workloads_get_the_deadline(
    store, queue, clock
):
    clock.now = COMMIT
    body = answer(store, queue, clock, [UNITS[0], UNITS[1]], noticeSeconds=120, reason="lab")
    deadline = AT_MS + timedelta(seconds=120)
    assert body["terminateAt"] == "2026-11-29T12:02:00.250Z"
    assert not {UNITS[0], UNITS[1]} & set(body["releasedUnitIds"])  # taken back at once
    assert body["terminated"] == ["vm-span", "vm-spot"]
    for workload_id in ("vm-spot", "vm-span"):
        record = workload(store, workload_id).termination
        assert (record.requested_at, record.terminate_at) == (AT_MS, deadline)
    events = {e["subject"]: e for e in requested_events(store)}
    assert set(events) == {"workloads/vm-spot", "workloads/vm-span"}
    for event in events.values():
        assert event["requestedAt"] == "2026-11-29T12:00:00.250Z"
        assert event["terminateAt"] == "2026-11-29T12:02:00.250Z"
    messages = queue.sent(QUEUE)
    assert {m.workload_id for m in messages} == {"vm-spot", "vm-span"}
    for message in messages:
        assert (message.requested_at, message.terminate_at) == (AT_MS, deadline)
        wire = json.loads(message.to_json())
        assert wire["terminateAt"] == "2026-11-29T12:02:00.250Z"
        assert wire["requestedAt"] == "2026-11-29T12:00:00.250Z"
    assert set(queue.deduplication_ids) == {m.termination_id for m in messages}
    assert set(queue.group_ids) == {"vm-spot", "vm-span"}  # as ever: the workload's group


def test_without_a_notice_terminate_at_is_the_request(store, queue, clock):
    clock.now = COMMIT
    body = answer(store, queue, clock, [UNITS[0]])
    assert body["terminateAt"] == "2026-11-29T12:00:00.250Z"
    [message] = queue.sent(QUEUE)
    assert message.terminate_at == message.requested_at == AT_MS
    [event] = requested_events(store)
    assert event["terminateAt"] == event["requestedAt"]


def test_the_answer_carries_terminate_at_even_when_nothing_is_terminated(store, queue, clock):
    body = answer(store, queue, clock, [UNITS[3]], noticeSeconds=30)  # reserved: skipped
    assert (body["terminated"], body["skipped"]) == ([], ["vm-res"])
    assert body["terminateAt"] == "2026-11-29T12:00:30Z"


def test_a_dry_run_with_a_notice_writes_nothing_and_answers_no_deadline(store, queue, clock):
    body = answer(store, queue, clock, [UNITS[0]], noticeSeconds=60, dryRun=True)
    assert body["wouldTerminate"] == ["vm-spot"]
    assert "terminateAt" not in body
    assert store.writes == 0
    assert queue.messages == {}
    assert workload(store, "vm-spot").state is WorkloadState.RUNNING


# --- a termination under way: the earlier deadline is kept --------------------------------


def test_a_later_deadline_leaves_a_termination_under_way_alone(store, queue, clock):
    answer(store, queue, clock, [UNITS[0]], noticeSeconds=60)
    before = workload(store, "vm-spot")
    clock.now = NOW + timedelta(seconds=10)
    body = answer(store, queue, clock, [UNITS[0]], noticeSeconds=3600)
    assert body["terminated"] == ["vm-spot"]  # counts as terminated
    assert body["terminateAt"] == "2026-11-29T13:00:10Z"  # this call's deadline
    assert workload(store, "vm-spot") == before  # keeps its own, earlier one
    assert len(queue.sent(QUEUE)) == 1  # not messaged twice
    assert len(requested_events(store)) == 1


def test_an_earlier_deadline_moves_it_and_is_sent_again_under_the_same_termination(
    store, queue, clock
):
    answer(store, queue, clock, [UNITS[0]], noticeSeconds=3600)
    first = workload(store, "vm-spot")
    [original] = queue.sent(QUEUE)
    clock.now = COMMIT + timedelta(seconds=10)
    body = answer(store, queue, clock, [UNITS[0]], noticeSeconds=5, reason="sooner")
    assert body["terminateAt"] == "2026-11-29T12:00:15.250Z"
    moved = workload(store, "vm-spot")
    assert moved.termination.id == first.termination.id
    assert moved.termination.requested_at == first.termination.requested_at  # the first ask
    assert moved.termination.terminate_at == AT_MS + timedelta(seconds=15)
    assert moved.termination.deadline_changes == 1
    assert moved.version == first.version + 1
    [_, again] = queue.sent(QUEUE)
    assert again.termination_id == original.termination_id
    assert again.terminate_at == AT_MS + timedelta(seconds=15)
    assert again.requested_at == original.requested_at
    tid = original.termination_id
    # A new message: another de-duplication id (SQS would drop the first one's within five
    # minutes) and its own group (the node holds the first one until its deadline).
    assert queue.deduplication_ids == [tid, f"{tid}#d1"]
    assert queue.group_ids == ["vm-spot", f"vm-spot#{tid}#d1"]
    [_, event] = requested_events(store)
    assert (event["terminationId"], event["terminateAt"]) == (tid, "2026-11-29T12:00:15.250Z")
    assert event["reason"] == "sooner"


def test_a_termination_stored_before_notices_is_due_at_its_request_and_never_moves(
    store, queue, clock
):
    before = workload(store, "vm-term")  # terminating since NOW - 5 min, no terminateAt
    body = answer(store, queue, clock, [UNITS[4]], noticeSeconds=0)
    assert body["terminated"] == ["vm-term"]
    assert workload(store, "vm-term") == before
    assert queue.messages == {}


def test_the_sweeper_sends_a_moved_deadline_under_its_own_ids_if_the_resend_was_lost(
    store, queue, clock
):
    answer(store, queue, clock, [UNITS[0]], noticeSeconds=3600)
    tid = workload(store, "vm-spot").termination.id
    queue.down = True
    clock.now = NOW + timedelta(seconds=1)
    answer(store, queue, clock, [UNITS[0]], noticeSeconds=600)
    queue.down = False
    sweeper.sweep(NOW + timedelta(seconds=61), POLICY, store, queue.send)
    sent = list(zip(queue.sent(QUEUE), queue.deduplication_ids, queue.group_ids, strict=True))
    [(again, dedup, group)] = [s for s in sent if s[0].workload_id == "vm-spot"][1:]
    assert again.terminate_at == NOW + timedelta(seconds=601)
    assert (dedup, group) == (f"{tid}#d1", f"vm-spot#{tid}#d1")


def test_a_key_takes_a_notice_of_0_as_no_notice_and_another_notice_as_another_request(
    store, queue, clock
):
    def keyed(**body):
        raw = RawBody(json.dumps({"unitIds": [UNITS[3]], **body}))
        return reclaim(BROKER, "node-a", "res-1", raw, "key-n", ports(store, clock, queue))

    first = keyed()
    assert keyed(noticeSeconds=0).body == first.body  # the same request: its replay
    with pytest.raises(IdempotencyKeyReused):
        keyed(noticeSeconds=60)


def test_a_send_of_the_old_deadline_is_not_counted_a_delivery_of_the_moved_one(store, queue, clock):
    answer(store, queue, clock, [UNITS[0]], noticeSeconds=3600)
    [read] = [t for t in store.listed(TerminationState.OPEN) if t.workload.id == "vm-spot"]
    clock.now = NOW + timedelta(seconds=1)
    answer(store, queue, clock, [UNITS[0]], noticeSeconds=60)  # moved after the sweeper read
    store.record_delivery(read, NOW + timedelta(seconds=2))  # the sweeper's send of the old
    moved = workload(store, "vm-spot").termination
    assert (moved.deliveries, moved.last_delivered_at) == (0, None)  # still to be sent

"""The sweeper and a reclaim's notice: its first send still comes a grace after the request
(the node needs the message before the deadline), but it waits for a report, sends again and
flags a termination stuck only counting from its ``terminateAt``; and the ids a moved
deadline's sends go under."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.nodes.models.partition import Termination, WorkloadState
from reservations.terminations import sweeper
from reservations.terminations.rules.delivery import (
    MAX_DEDUPLICATION_ID,
    RedeliveryPolicy,
    deduplication_id,
    is_due,
    message_group,
)
from tests.support.fakes import ports
from tests.support.use_cases import BROKER, NOW, QUEUE, UNITS, workload
from tests.support.writes import reclaim

pytestmark = pytest.mark.disable_socket

POLICY = RedeliveryPolicy(
    grace=timedelta(seconds=60),
    confirm_deadline=timedelta(seconds=600),
    stuck_resend=timedelta(seconds=3600),
    max_deliveries=2,
)
HOUR = timedelta(hours=1)


def terminating(deliveries: int = 0, last: float | None = None, notice=HOUR):
    record = Termination(
        "t-1",
        "res-1",
        requested_at=NOW,
        terminate_at=NOW + notice if notice is not None else None,
        deliveries=deliveries,
        last_delivered_at=NOW + timedelta(seconds=last) if last is not None else None,
    )
    return workload("vm-1", (UNITS[0],), state=WorkloadState.TERMINATING, termination=record)


def test_the_first_send_is_a_grace_after_the_request_whatever_the_notice():
    assert not is_due(terminating(), POLICY, NOW + timedelta(seconds=59))
    assert is_due(terminating(), POLICY, NOW + timedelta(seconds=60))


def test_after_a_send_the_wait_for_a_report_counts_from_terminate_at():
    sent = terminating(deliveries=1, last=60)
    assert not is_due(sent, POLICY, NOW + timedelta(seconds=60 + 600))  # before: as it was
    assert not is_due(sent, POLICY, NOW + HOUR + timedelta(seconds=599))
    assert is_due(sent, POLICY, NOW + HOUR + timedelta(seconds=600))


def test_a_send_after_the_deadline_counts_from_itself():
    late = terminating(deliveries=2, last=3600 + 700)
    assert not is_due(late, POLICY, NOW + HOUR + timedelta(seconds=700 + 599))
    assert is_due(late, POLICY, NOW + HOUR + timedelta(seconds=700 + 600))


def test_a_termination_from_before_notices_counts_from_its_last_send_as_ever():
    legacy = terminating(deliveries=1, last=60, notice=None)
    assert is_due(legacy, POLICY, NOW + timedelta(seconds=660))


def test_a_long_notice_is_never_sent_again_nor_flagged_stuck_before_its_deadline(
    store, queue, clock
):
    raw = RawBody(json.dumps({"unitIds": [UNITS[0]], "noticeSeconds": 3600}))
    assert reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue)).status == 200

    def spot():
        return store.nodes["node-a"].workloads["vm-spot"].termination

    for minute in range(1, 61):  # a pass a minute, through the whole notice
        sweeper.sweep(NOW + timedelta(minutes=minute), POLICY, store, queue.send)
        assert (spot().deliveries, spot().stuck_at) == (1, None), minute
    mine = [m for m in queue.sent(QUEUE) if m.workload_id == "vm-spot"]
    assert len(mine) == 2  # the reclaim's own, and the sweeper's first (de-duplicated by SQS)
    # After the deadline, and no report: sent again, then flagged.
    after = NOW + HOUR + timedelta(seconds=600)
    assert sweeper.sweep(after, POLICY, store, queue.send)["redelivered"] >= 1
    assert spot().stuck_at is None
    sweeper.sweep(after + timedelta(seconds=600), POLICY, store, queue.send)
    assert spot().stuck_at == after + timedelta(seconds=600)


def test_a_moved_deadlines_sends_have_ids_of_their_own():
    assert deduplication_id("t-1", 0) == "t-1"
    assert deduplication_id("t-1", 0, 1) == "t-1#d1"
    assert deduplication_id("t-1", 2, 1) == "t-1#d1#r2"
    assert deduplication_id("t-1", 2, 3) == "t-1#d3#r2"
    assert message_group("vm-1", "t-1", 0) == "vm-1"
    assert message_group("vm-1", "t-1", 2) == "vm-1#t-1#d2"
    long = message_group("v" * 128, "t-1", 1)
    assert long.startswith("sha256-")
    assert len(long) <= MAX_DEDUPLICATION_ID
    assert long != message_group("v" * 128, "t-1", 2)

"""A placement with ``reservationId`` takes lent units back, over the fakes: each refusal,
each step of the order ``count`` takes units in, 201 running or 202 waiting with what it
waits on, the take-back's reclaim (releases, the wait after a take-back, terminations and
their messages, events), the hand-over of a held unit on a report and on an end, and a
waiting workload ended."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.capacity.rules.idle import idle_of
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import ApiError, InvalidRequest
from reservations.nodes.models.partition import (
    LendingPolicy,
    Node,
    ReservationStatus,
    Termination,
    Tier,
    WorkloadState,
)
from reservations.nodes.views import read_workload_view
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import apply_report
from tests.support.fakes import FakeClock, FakeQueue, FakeTable, ports
from tests.support.use_cases import NOW, QUEUE, reservation, unit, workload
from tests.support.writes import end_workload, place_workload, put_node

pytestmark = pytest.mark.disable_socket

SCHEDULER = Caller(
    "key-sched", "org-op", frozenset({"workload.place"}), platform_operator=True, key_hash="hs"
)
F1, F2 = "0000:04:00.0", "0000:05:00.0"  # free, not released
R1 = "0000:06:00.0"  # free, released
T1, T2 = "0000:07:00.0", "0000:08:00.0"  # released, spot terminating (T2's due first)
S1, S2 = "0000:09:00.0", "0000:0a:00.0"  # released, one running spot VM on both
S3 = "0000:0b:00.0"  # released, a smaller running spot VM
LAB = "0000:0c:00.0"  # claimed by the audience's own work
OTHER = "0000:0d:00.0"  # another reservation's
RES_A = (F1, F2, R1, T1, T2, S1, S2, S3, LAB)
POLICY = LendingPolicy(True, notice_seconds=120, relend_after_seconds=300)


def terminating(workload_id, units, termination_id, due_in):
    return workload(
        workload_id,
        units,
        state=WorkloadState.TERMINATING,
        termination=Termination(
            termination_id,
            "res-a",
            None,
            NOW - timedelta(minutes=1),
            terminate_at=NOW + timedelta(seconds=due_in),
        ),
    )


@pytest.fixture
def store(clock: FakeClock) -> FakeTable:
    store = FakeTable(clock)
    claims = {
        T1: "vm:vm-term",
        T2: "vm:vm-term2",
        S1: "vm:vm-big",
        S2: "vm:vm-big",
        S3: "vm:vm-small",
        LAB: "vm:vm-lab",
    }
    store.add(
        Node("node-a", "org-acme", queue_url=QUEUE),
        [unit(u, claims.get(u)) for u in (*RES_A, OTHER)],
        [
            reservation("res-a", reserved=RES_A, released=(R1, T1, T2, S1, S2, S3), lending=POLICY),
            reservation("res-other", reserved=(OTHER,), released=(), allowed_org_ids=("org-x",)),
        ],
        [
            terminating("vm-term", (T1,), "t-term", 300),
            terminating("vm-term2", (T2,), "t-term2", 60),
            workload("vm-big", (S1, S2), created_at=NOW - timedelta(hours=1)),
            workload("vm-small", (S3,), created_at=NOW - timedelta(hours=1)),
            replace(workload("vm-lab", (LAB,), tier=Tier.RESERVED), org_id="org-lab"),
        ],
    )
    return store


def body(**fields):
    document = {"id": "vm-new", "kind": "vm", "tier": "reserved", "orgId": "org-lab"}
    document |= {"reservationId": "res-a", **fields}
    return {k: v for k, v in document.items() if v is not None}


def place(store, clock, document, queue=None, key=None):
    """The answer as the client reads it: a refusal the use case raises, as its body."""
    raw = RawBody(json.dumps(document))
    try:
        outcome = place_workload(SCHEDULER, "node-a", raw, key, ports(store, clock, queue))
    except ApiError as refused:
        details = [{"field": d.field, "problem": d.problem} for d in refused.details or ()]
        return refused.status, {"code": refused.code, "error": refused.message, "details": details}
    return outcome.status, json.loads(outcome.body)


def partition(store):
    return store.nodes["node-a"]


def events_of(store, event_type):
    return [e.event.envelope(True) for e in store.events if e.event.type.value == event_type]


# The order count takes units in.


@pytest.mark.parametrize(
    ("count", "taken"),
    [
        (1, [F1]),  # 1. free, not released, by id
        (2, [F1, F2]),
        (3, [F1, F2, R1]),  # 2. free and released
        (4, [F1, F2, R1, T2]),  # 3. under a termination, the earliest deadline first
        (5, [F1, F2, R1, T1, T2]),
        (6, [F1, F2, R1, S1, T1, T2]),  # 4. the spot VM holding the most of them first
        (7, [F1, F2, R1, S1, S2, T1, T2]),
        (8, [F1, F2, R1, S1, S2, S3, T1, T2]),
    ],
)
def test_count_takes_units_in_the_contracts_order(store, clock, count, taken):
    status, answer = place(store, clock, body(count=count))
    assert status in (201, 202)
    assert answer["unitIds"] == sorted(taken)


def test_a_count_it_cannot_give_is_409_not_enough_units_naming_how_many_it_can(store, clock):
    status, answer = place(store, clock, body(count=9))  # LAB is its audience's: 8 at most
    assert (status, answer["code"]) == (409, "not_enough_units")
    assert "can give 8 units; 9 were asked for" in answer["error"]
    assert "vm-new" not in partition(store).workloads


def test_free_units_only_are_claimed_at_once_201_running_and_nothing_is_taken_back(store, clock):
    before = partition(store).reservations["res-a"]
    status, answer = place(store, clock, body(count=2))
    assert status == 201
    assert answer["state"] == "running"
    assert "waitingFor" not in answer or answer["waitingFor"] is None
    units = partition(store).units
    assert units[F1].claimed_by == units[F2].claimed_by == "vm:vm-new"
    assert partition(store).reservations["res-a"] == before  # only checked, not written
    [placed] = events_of(store, "workload.placed")
    assert placed["data"]["reclaimedUnitIds"] == []
    assert placed["data"]["state"] == "running"
    assert events_of(store, "reservation.reclaimed") == []


def test_a_released_free_unit_is_taken_back_and_claimed_in_the_same_write(store, clock):
    before = partition(store).reservations["res-a"]
    status, _ = place(store, clock, body(unitIds=[R1]))
    assert status == 201
    after = partition(store).reservations["res-a"]
    assert R1 not in after.released_unit_ids
    assert after.version == before.version + 1  # a take-back changes the reservation's ETag
    assert partition(store).units[R1].claimed_by == "vm:vm-new"
    # The lending policy waits relendAfterSeconds before lending the unit again.
    record = dict(after.lending_units)[R1]
    assert (record.relend_at, record.take_backs) == (NOW + timedelta(seconds=300), 1)
    [reclaimed] = events_of(store, "reservation.reclaimed")
    assert reclaimed["data"]["cause"] == "placement"
    assert reclaimed["data"]["workloadId"] == "vm-new"
    assert reclaimed["data"]["unitIds"] == [R1]
    [placed] = events_of(store, "workload.placed")
    assert placed["data"]["reclaimedUnitIds"] == [R1]


def test_a_unit_under_a_termination_is_held_and_the_answer_is_202_waiting(store, clock):
    status, answer = place(store, clock, body(unitIds=[F1, T2]))
    assert status == 202
    assert answer["state"] == "waiting"
    assert answer["waitingFor"] == [
        {
            "workloadId": "vm-term2",
            "terminationId": "t-term2",
            "terminateAt": "2026-11-29T12:01:00Z",
        }
    ]
    units = partition(store).units
    assert (units[T2].claimed_by, units[T2].held_for) == ("vm:vm-term2", "vm:vm-new")
    assert units[F1].claimed_by == "vm:vm-new"
    stored = partition(store).workloads["vm-new"]
    assert stored.state is WorkloadState.WAITING
    assert stored.unit_ids == (F1, T2)


def test_a_running_spot_workload_on_a_taken_unit_is_terminated_whole_as_a_reclaim_does(
    store, clock, queue: FakeQueue
):
    status, answer = place(store, clock, body(unitIds=[S1]), queue)
    assert status == 202
    big = partition(store).workloads["vm-big"]
    assert big.state is WorkloadState.TERMINATING
    termination = big.termination
    assert termination is not None
    # The latest of the commit (a take-back's own notice is 0) and the policy's 120 s.
    assert termination.terminate_at == NOW + timedelta(seconds=120)
    assert termination.reservation_id == "res-a"
    assert answer["waitingFor"] == [
        {
            "workloadId": "vm-big",
            "terminationId": termination.id,
            "terminateAt": "2026-11-29T12:02:00Z",
        }
    ]
    # Only the unit taken leaves the releases: the other stays lent until vm-big stops.
    released = partition(store).reservations["res-a"].released_unit_ids
    assert S1 not in released
    assert S2 in released
    assert partition(store).units[S2].held_for is None
    [message] = queue.sent(QUEUE)
    assert (message.workload_id, message.termination_id) == ("vm-big", termination.id)
    [requested] = events_of(store, "workload.termination_requested")
    assert requested["data"]["terminationId"] == termination.id
    [reclaimed] = events_of(store, "reservation.reclaimed")
    assert reclaimed["data"]["terminated"] == ["vm-big"]


def test_a_promise_makes_the_termination_later_than_the_policys_notice(store, clock):
    small = partition(store).workloads["vm-small"]
    partition(store).workloads["vm-small"] = replace(small, promised_notice_seconds=600)
    status, answer = place(store, clock, body(unitIds=[S3]))
    assert status == 202
    assert answer["waitingFor"][0]["terminateAt"] == "2026-11-29T12:10:00Z"


# Refusals.


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"tier": "spot", "count": 1}, "tier"),
        ({"tier": "on-demand", "unitIds": [F1]}, "tier"),
        ({"count": 1, "unitIds": [F1]}, "unitIds"),
        ({}, "unitIds"),
        ({"unitIds": [f"0000:{i:02x}:00.0" for i in range(17)]}, "unitIds"),
        ({"count": 17}, "count"),
        ({"count": 0}, "count"),
        ({"reservationId": None, "count": 1}, "count"),
    ],
)
def test_a_bad_body_is_400_naming_the_field(store, clock, fields, problem):
    document = body(**fields)
    if "reservationId" in fields:
        document.pop("reservationId", None)
    status, answer = place(store, clock, document)
    assert (status, answer["code"]) == (400, InvalidRequest.code)
    assert problem in {detail["field"] for detail in answer["details"]}


def test_an_unknown_reservation_is_422(store, clock):
    status, answer = place(store, clock, body(reservationId="res-nope", count=1))
    assert (status, answer["code"]) == (422, "unknown_reservation")


@pytest.mark.parametrize(
    "changes",
    [
        {"status": ReservationStatus.PENDING, "starts_at": NOW + timedelta(days=1)},
        {"status": ReservationStatus.CANCELLED},
        {"ends_at": NOW - timedelta(minutes=1)},  # expired, though stored active
    ],
)
def test_a_reservation_not_active_now_is_409(store, clock, changes):
    reservations = partition(store).reservations
    reservations["res-a"] = replace(reservations["res-a"], **changes)
    status, answer = place(store, clock, body(count=1))
    assert (status, answer["code"]) == (409, "reservation_not_active")


def test_an_org_outside_the_audience_is_422(store, clock):
    status, answer = place(store, clock, body(orgId="org-spot", count=1))
    assert (status, answer["code"]) == (422, "org_not_in_audience")


@pytest.mark.parametrize(
    ("unit_id", "why"),
    [
        (LAB, "work of the reservation's audience"),
        (OTHER, "not in reservation res-a"),
    ],
)
def test_a_named_unit_it_may_not_give_is_409_units_unavailable(store, clock, unit_id, why):
    status, answer = place(store, clock, body(unitIds=[F1, unit_id]))
    assert (status, answer["code"]) == (409, "units_unavailable")
    [detail] = answer["details"]
    assert detail["field"] == "unitIds[1]"
    assert why in detail["problem"]


def test_a_unit_not_on_the_node_is_422_units_not_sellable(store, clock):
    status, answer = place(store, clock, body(unitIds=[F1, "0000:ff:00.0"]))
    assert (status, answer["code"]) == (422, "units_not_sellable")


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"count": 9}, "not_enough_units"),
        ({"reservationId": "res-nope", "count": 1}, "unknown_reservation"),
        ({"orgId": "org-spot", "count": 1}, "org_not_in_audience"),
    ],
)
def test_the_decisions_are_kept_by_an_idempotency_key(store, clock, fields, code):
    status, first = place(store, clock, body(**fields), key="k-1")
    assert first["code"] == code
    # Whatever changes after, the key's answer is the first one, replayed.
    partition(store).units[LAB] = replace(partition(store).units[LAB], claimed_by=None)
    reservations = partition(store).reservations
    reservations["res-nope"] = replace(reservations["res-a"], id="res-nope")
    reservations["res-a"] = replace(reservations["res-a"], allowed_org_ids=("org-lab", "org-spot"))
    again, replayed = place(store, clock, body(**fields), key="k-1")
    assert (again, replayed["code"], replayed["error"]) == (status, code, first["error"])
    assert "vm-new" not in partition(store).workloads


# A held unit.


def test_nothing_else_may_be_placed_on_a_held_unit(store, clock):
    place(store, clock, body(unitIds=[T2]))
    status, answer = place(store, clock, body(id="vm-other", unitIds=[T2]))
    assert (status, answer["code"]) == (409, "units_unavailable")
    assert "held for vm:vm-new" in answer["details"][0]["problem"]
    # Nor spot work of anyone, were the unit lent again.
    spot = {"id": "vm-spot2", "kind": "vm", "tier": "spot", "orgId": "org-spot", "unitIds": [T2]}
    status, answer = place(store, clock, spot)
    assert (status, answer["code"]) == (409, "units_unavailable")


def test_a_held_unit_counts_as_busy_for_the_lending_pass(store, clock):
    place(store, clock, body(unitIds=[T2]))
    held = replace(partition(store).units[T2], claimed_by=None)  # the hold alone
    idle = idle_of(partition(store).reservations["res-a"], POLICY, {T2: held})
    assert T2 in idle.busy


def report(termination_id, workload_id):
    return TerminationReport(
        termination_id=termination_id,
        node_id="node-a",
        workload_id=workload_id,
        outcome="terminated",
        reported_at=NOW,
    )


def test_the_report_hands_the_held_unit_over_and_the_last_one_starts_the_workload(store, clock):
    place(store, clock, body(unitIds=[T1, T2]))
    assert apply_report(report("t-term2", "vm-term2"), NOW, store, store) == "closed"
    units, waiting = partition(store).units, partition(store).workloads["vm-new"]
    assert (units[T2].claimed_by, units[T2].held_for) == ("vm:vm-new", None)
    assert waiting.state is WorkloadState.WAITING
    assert [w for w, _, _ in waiting.waiting_for] == ["vm-term"]
    assert events_of(store, "workload.started") == []
    assert apply_report(report("t-term", "vm-term"), NOW, store, store) == "closed"
    started = partition(store).workloads["vm-new"]
    assert (started.state, started.waiting_for) == (WorkloadState.RUNNING, ())
    assert partition(store).units[T1].claimed_by == "vm:vm-new"
    [event] = events_of(store, "workload.started")
    assert event["subject"] == "workloads/vm-new"
    assert event["data"]["unitIds"] == [T1, T2]


def test_the_schedulers_end_of_the_spot_workload_hands_the_unit_over_too(store, clock):
    place(store, clock, body(unitIds=[T2]))
    outcome = end_workload(SCHEDULER, "node-a", "vm-term2", None, ports(store, clock))
    assert outcome.status == 204
    assert partition(store).units[T2].claimed_by == "vm:vm-new"
    assert partition(store).workloads["vm-new"].state is WorkloadState.RUNNING
    [ended] = events_of(store, "workload.ended")
    assert ended["data"]["freedUnitIds"] == []  # handed over, not freed
    assert len(events_of(store, "workload.started")) == 1


def test_ending_a_waiting_workload_drops_its_holds_and_the_take_back_stays(store, clock):
    place(store, clock, body(unitIds=[F1, T2]))
    outcome = end_workload(SCHEDULER, "node-a", "vm-new", None, ports(store, clock))
    assert outcome.status == 204
    units = partition(store).units
    assert (units[T2].claimed_by, units[T2].held_for) == ("vm:vm-term2", None)
    assert units[F1].claimed_by is None
    assert T2 not in partition(store).reservations["res-a"].released_unit_ids
    # The spot workload's report then frees the unit: nothing waits on it any more.
    assert apply_report(report("t-term2", "vm-term2"), NOW, store, store) == "closed"
    assert partition(store).units[T2].claimed_by is None
    assert events_of(store, "workload.started") == []


def test_a_waiting_workload_reads_as_waiting_and_its_event_says_what_it_waits_on(store, clock):
    place(store, clock, body(unitIds=[T2]))
    view = read_workload_view("node-a", partition(store).workloads["vm-new"])
    assert view.state == "waiting"
    assert [(w.workload_id, w.termination_id) for w in view.waiting_for or []] == [
        ("vm-term2", "t-term2")
    ]
    [placed] = events_of(store, "workload.placed")
    assert placed["data"]["state"] == "waiting"
    assert placed["data"]["reservationId"] == "res-a"
    assert placed["data"]["reclaimedUnitIds"] == [T2]  # released: it leaves the releases
    assert placed["data"]["waitingFor"] == [
        {
            "workloadId": "vm-term2",
            "terminationId": "t-term2",
            "terminateAt": "2026-11-29T12:01:00Z",
        }
    ]


def test_a_node_update_changing_a_held_unit_keeps_the_hold(store, clock):
    place(store, clock, body(unitIds=[T2]))
    node = partition(store).node
    partition(store).node = replace(node, topology_gen=3)
    units = [
        {"id": u.id, "allocClass": "vfio-group", "gpuModelId": "h100", "sellableGpus": 1,
         "sellable": True}
        for u in partition(store).units.values()
    ]  # fmt: skip
    [changed] = [u for u in units if u["id"] == T2]
    changed["gpuModelId"] = "h200"
    document = {"ownerOrgId": "org-acme", "topologyGen": 4, "units": units}
    operator = Caller("key-op", "org-op", frozenset({"node.write"}), platform_operator=True)
    outcome = put_node(operator, "node-a", RawBody(json.dumps(document)), ports(store, clock))
    assert outcome.status == 200, outcome.body
    after = partition(store).units[T2]
    assert (after.gpu_model_id, after.claimed_by, after.held_for) == (
        "h200",
        "vm:vm-term2",
        "vm:vm-new",
    )

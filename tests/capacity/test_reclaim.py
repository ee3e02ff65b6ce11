"""Reclaim over the fakes: every rule of the contract's reclaim, in milliseconds."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.capacity.rules.outbox import opened_by
from reservations.kernel import retries
from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import Conflict, IdempotencyKeyReused, InvalidRequest, NotFound
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.kernel.writes import WriteConflict
from reservations.lifecycle.errors import ReservationNotActive, UnitsNotInReservation
from reservations.nodes.list_units import list_units
from reservations.nodes.models.partition import Node, ReservationStatus, Tier, WorkloadState
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import apply_report
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import (
    AUDIENCE,
    BROKER,
    NOW,
    OPERATOR,
    OWNER,
    QUEUE,
    STRANGER,
    UNITS,
    reservation,
    unit,
    workload,
)
from tests.support.writes import reclaim

pytestmark = pytest.mark.disable_socket


def run(store, queue, clock, unit_ids, *, caller=BROKER, node="node-a", res="res-1", **body):
    raw = RawBody(json.dumps({"unitIds": unit_ids, **body}))
    return reclaim(caller, node, res, raw, None, ports(store, clock, queue))


def answer(store, queue, clock, unit_ids, key=None, **body):
    raw = RawBody(json.dumps({"unitIds": unit_ids, **body}))
    outcome = reclaim(BROKER, "node-a", "res-1", raw, key, ports(store, clock, queue))
    return outcome.status, json.loads(outcome.body)


# --- who may: the one 404 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("caller", "node", "res"),
    [
        (STRANGER, "node-a", "res-1"),
        (AUDIENCE, "node-a", "res-1"),  # in allowedOrgIds, not managing: not allowed
        (BROKER, "node-x", "res-1"),
        (BROKER, "node-a", "res-x"),
        (BROKER, "node a", "res-1"),
        (BROKER, "node-a", "res/1"),
        (replace(BROKER, permissions=frozenset({"reservation.read"})), "node-a", "res-1"),
    ],
)
def test_unknown_malformed_and_not_allowed_are_the_same_404(store, queue, clock, caller, node, res):
    with pytest.raises(NotFound):
        run(store, queue, clock, [UNITS[0]], caller=caller, node=node, res=res)
    assert store.writes == 0


def test_malformed_ids_and_a_missing_permission_are_refused_before_the_read(store, queue, clock):
    reader = replace(BROKER, permissions=frozenset({"reservation.read"}))
    for caller, node in ((BROKER, "node a"), (reader, "node-a")):
        with pytest.raises(NotFound):
            run(store, queue, clock, [UNITS[0]], caller=caller, node=node)
    assert store.reads == 0


@pytest.mark.parametrize("caller", [OWNER, OPERATOR, BROKER])
def test_owner_operator_and_managing_org_may_reclaim(store, queue, clock, caller):
    assert run(store, queue, clock, [UNITS[0]], caller=caller).status == 200


def test_a_bad_body_is_400_but_a_key_without_capacity_hears_404_first(store, queue, clock):
    no_capacity = replace(BROKER, permissions=frozenset({"reservation.read"}))
    with pytest.raises(NotFound):
        reclaim(no_capacity, "node-a", "res-1", RawBody("{"), None, ports(store, clock, queue))
    assert store.reads == 0  # settled by the key alone
    with pytest.raises(InvalidRequest):
        reclaim(OPERATOR, "node-a", "res-1", RawBody("{"), None, ports(store, clock, queue))
    assert store.reads == 0  # the operator may act on any node: the body first
    with pytest.raises(InvalidRequest):
        reclaim(
            BROKER, "node-a", "res-1", RawBody('{"unitIds": []}'), None, ports(store, clock, queue)
        )
    assert store.reads == 1  # res-1's manager: the node read settles it, then the body


@pytest.mark.parametrize(
    ("caller", "node", "res", "reads"),
    [
        (STRANGER, "node-a", "res-1", 1),  # capacity, but neither owner nor manager
        # manages res-1, not a reservation the node lacks (which may be in its history: one
        # read of that more, on this path alone)
        (BROKER, "node-a", "res-x", 2),
        (BROKER, "node-x", "res-1", 1),  # a node that does not exist
    ],
)
def test_an_org_that_may_not_reclaim_here_hears_404_before_a_bad_body(
    store, queue, clock, caller, node, res, reads
):
    """The contract's order: an org that may not make this call on this node is a 404
    before the body's 400; the node read that settles it is the one a reclaim makes."""
    with pytest.raises(NotFound):
        reclaim(caller, node, res, RawBody('{"unitIds": []}'), None, ports(store, clock, queue))
    assert (store.reads, store.writes) == (reads, 0)


def test_the_owner_hears_the_body_first_and_then_the_reservations_404(store, queue, clock):
    with pytest.raises(InvalidRequest):
        reclaim(OWNER, "node-a", "res-x", RawBody("{"), None, ports(store, clock, queue))
    with pytest.raises(NotFound):
        reclaim(OWNER, "node-a", "res-x", RawBody('{"unitIds": ["0000:04:00.0"]}'), None,
                ports(store, clock, queue))  # fmt: skip


def test_a_managers_reclaim_still_reads_the_node_once(store, queue, clock):
    body = RawBody('{"unitIds": ["0000:04:00.0"], "dryRun": true}')
    assert reclaim(BROKER, "node-a", "res-1", body, None, ports(store, clock, queue)).status == 200
    assert store.reads == 1


# --- 409 not active, 422 outside ------------------------------------------------------------


def _with_reservation(store: FakeTable, **changes: object) -> None:
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(partition.reservations["res-1"], **changes)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"status": ReservationStatus.PENDING, "starts_at": NOW + timedelta(hours=1)}, "pending"),
        ({"status": ReservationStatus.CANCELLED}, "cancelled"),
        ({"status": ReservationStatus.NEEDS_REVIEW}, "needs-review"),
        ({"status": ReservationStatus.EXPIRED}, "expired"),
        ({"ends_at": NOW}, "expired"),  # active, but the clock has passed its end
        ({"starts_at": NOW + timedelta(hours=1)}, "term has not started"),  # stored active
    ],
)
def test_a_reservation_that_is_not_active_now_is_409(store, queue, clock, changes, says):
    _with_reservation(store, **changes)
    with pytest.raises(ReservationNotActive, match=says):
        run(store, queue, clock, [UNITS[0]])
    assert store.audit == []


def test_units_outside_the_reservation_are_422_naming_each(store, queue, clock):
    _with_reservation(store, reserved_unit_ids=(UNITS[0], UNITS[1]))
    with pytest.raises(UnitsNotInReservation) as refused:
        run(store, queue, clock, [UNITS[0], "0000:0A:00.0", UNITS[3]])
    assert [(d.field, d.problem) for d in refused.value.details] == [
        ("unitIds[1]", "0000:0a:00.0 is not reserved"),  # at its place in the request
        ("unitIds[2]", "0000:07:00.0 is not reserved"),
    ]
    assert store.audit == []


# --- the plan -------------------------------------------------------------------------------


def test_spot_is_terminated_others_skipped_terminating_counted_but_not_messaged(
    store, queue, clock
):
    status, body = answer(store, queue, clock, UNITS, reason="lab needs them")
    assert status == 200
    assert body["terminated"] == ["vm-span", "vm-spot", "vm-term"]
    assert body["skipped"] == ["vm-res"]
    assert body["releasedUnitIds"] == []
    assert body["updatedAt"] == "2026-11-29T12:00:00Z"
    sent = queue.sent(QUEUE)
    assert sorted(m.workload_id for m in sent) == ["vm-span", "vm-spot"]  # not vm-term again
    workloads = store.nodes["node-a"].workloads
    for message in sent:
        terminating = workloads[message.workload_id]
        assert terminating.state is WorkloadState.TERMINATING
        assert terminating.termination.id == message.termination_id
        assert message.reason == "lab needs them"
        assert message.reservation_id == "res-1"
        assert message.unit_ids == list(terminating.unit_ids)
    assert workloads["vm-res"].state is WorkloadState.RUNNING


def test_a_spot_workload_spanning_an_unnamed_unit_is_terminated_whole(store, queue, clock):
    status, body = answer(store, queue, clock, [UNITS[1]])  # vm-span also holds 06
    assert (status, body["terminated"], body["skipped"]) == (200, ["vm-span"], [])
    assert body["releasedUnitIds"] == [UNITS[0], UNITS[2]]
    [message] = queue.sent(QUEUE)
    assert message.unit_ids == [UNITS[1], UNITS[2]]


def test_the_outbox_holds_each_new_termination_as_its_workload_terminating_since_the_write(
    store, queue, clock
):
    read = list(store.nodes["node-a"].workloads.values())
    answer(store, queue, clock, [UNITS[1]], reason="lab")
    [write] = store.audit
    [opened] = opened_by(write, read)
    [new] = write.terminations
    terminating = opened.workload
    assert (opened.node_id, terminating.id) == ("node-a", "vm-span")
    assert terminating.state is WorkloadState.TERMINATING
    assert (terminating.termination.id, terminating.termination.reservation_id) == (
        new.termination_id,
        "res-1",
    )
    assert (terminating.termination.reason, terminating.termination.requested_at) == (
        "lab",
        write.at,
    )


def test_reclaiming_units_not_released_changes_no_releases(store, queue, clock):
    status, body = answer(store, queue, clock, [UNITS[3]])
    assert (status, body["terminated"], body["skipped"]) == (200, [], ["vm-res"])
    assert body["updatedAt"] == "2026-11-27T12:00:00Z"
    [write] = store.audit
    assert write.released_after is None  # only the reservation's version is checked


def test_the_write_checks_every_item_it_decided_from(store, queue, clock):
    answer(store, queue, clock, UNITS)
    [write] = store.audit
    assert [u.id for u in write.units] == UNITS
    assert sorted(w.id for w in write.unchanged_workloads) == ["vm-res", "vm-term"]
    assert write.caller_org_id == "org-broker"


def test_a_dry_run_writes_nothing_and_says_what_would_happen(store, queue, clock):
    status, body = answer(store, queue, clock, UNITS, dryRun=True)
    assert status == 200
    assert (body["wouldTerminate"], body["wouldSkip"]) == (
        ["vm-span", "vm-spot", "vm-term"],
        ["vm-res"],
    )
    assert "terminated" not in body
    assert body["releasedUnitIds"] == UNITS[:3]
    assert (store.writes, queue.messages) == (0, {})


# --- conflicts ------------------------------------------------------------------------------


class Conflicting(FakeTable):
    """Loses the next ``losses`` commits to a concurrent writer."""

    losses = 0

    def commit(self, write, answer=None):
        if self.losses:
            self.losses -= 1
            raise WriteConflict("TransactionConflict")
        super().commit(write, answer)


@pytest.fixture
def conflicting(store: FakeTable, clock: FakeClock) -> Conflicting:
    fake = Conflicting(clock)
    fake.nodes = store.nodes
    return fake


def test_a_lost_race_is_read_again_and_retried(conflicting, queue, clock):
    conflicting.losses = MAX_ATTEMPTS - 1
    assert run(conflicting, queue, clock, [UNITS[0]]).status == 200
    assert conflicting.reads == MAX_ATTEMPTS
    assert len(conflicting.audit) == 1


def test_losing_every_attempt_is_409_conflict_and_changes_nothing(conflicting, queue, clock):
    conflicting.losses = MAX_ATTEMPTS
    with pytest.raises(Conflict):
        run(conflicting, queue, clock, [UNITS[0]])
    assert conflicting.reads == MAX_ATTEMPTS
    assert (conflicting.audit, queue.messages) == ([], {})


def test_a_spot_vm_placed_between_read_and_write_is_terminated_by_the_retry(store, queue, clock):
    partition = store.nodes["node-a"]
    partition.workloads.pop("vm-res")
    partition.units[UNITS[3]] = replace(partition.units[UNITS[3]], claimed_by=None)

    def scheduler_places() -> None:
        partition.workloads["vm-late"] = workload("vm-late", (UNITS[3],))
        partition.units[UNITS[3]] = replace(
            partition.units[UNITS[3]], claimed_by="vm:vm-late", version=2
        )

    store.between_read_and_write.append(scheduler_places)
    status, body = answer(store, queue, clock, [UNITS[3]])
    assert (status, body["terminated"]) == (200, ["vm-late"])
    assert store.reads == 2
    assert [m.workload_id for m in queue.sent(QUEUE)] == ["vm-late"]


def test_a_queue_that_is_down_leaves_the_committed_terminations_for_the_sweeper(
    store, queue, clock
):
    queue.down = True
    status, body = answer(store, queue, clock, [UNITS[0]])
    assert (status, body["terminated"]) == (200, ["vm-spot"])
    assert store.nodes["node-a"].workloads["vm-spot"].state is WorkloadState.TERMINATING
    assert queue.messages == {}


def test_a_node_without_a_queue_commits_and_sends_nothing(store, queue, clock):
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, queue_url=None)
    assert answer(store, queue, clock, [UNITS[0]])[0] == 200
    assert queue.messages == {}


def test_only_spot_is_ever_terminated(store, queue, clock):
    partition = store.nodes["node-a"]
    partition.workloads["vm-spot"] = replace(partition.workloads["vm-spot"], tier=Tier.ON_DEMAND)
    _, body = answer(store, queue, clock, [UNITS[0]])
    assert (body["terminated"], body["skipped"]) == ([], ["vm-spot"])
    assert queue.messages == {}


def post(store, queue, clock, body, key=None, caller=BROKER, res="res-1", sleep=None):
    wired = ports(store, clock, queue)
    if sleep is not None:
        wired = replace(wired, sleep=sleep)
    outcome = reclaim(caller, "node-a", res, RawBody(json.dumps(body)), key, wired)
    return outcome.status, json.loads(outcome.body)


def test_the_reclaimed_units_leave_the_spot_market_in_the_store(store, queue, clock):
    post(store, queue, clock, {"unitIds": [UNITS[1]]})
    stored = store.nodes["node-a"].reservations["res-1"]
    assert stored.released_unit_ids == (UNITS[0], UNITS[2])
    assert stored.updated_at == NOW
    released = {u.id: u.released for u in list_units(BROKER, "node-a", store, NOW)}
    assert released[UNITS[1]] is False
    assert released[UNITS[0]] is True


def test_each_terminated_workload_gets_its_own_termination_id(store, queue, clock):
    post(store, queue, clock, {"unitIds": UNITS[:2]})
    messages = queue.sent(QUEUE)
    assert len({m.termination_id for m in messages}) == len(messages) == 2
    workloads = store.nodes["node-a"].workloads
    for message in messages:
        assert workloads[message.workload_id].termination.id == message.termination_id


def test_the_audit_record_says_who_reclaimed_what_and_each_reclaim_has_its_own(store, queue, clock):
    post(store, queue, clock, {"unitIds": UNITS[:2]})
    post(store, queue, clock, {"unitIds": [UNITS[3]]})  # the same instant
    first, second = store.audit
    assert first.write_id != second.write_id
    audit = first.audit
    assert (first.caller_org_id, first.caller_key_id) == ("org-broker", "key-broker")
    assert audit.unit_ids == tuple(UNITS[:2])
    assert audit.released_before == tuple(UNITS[:3])
    assert (audit.terminated, audit.skipped) == (("vm-span", "vm-spot"), ())
    assert second.audit.skipped == ("vm-res",)


def test_the_answer_shows_the_reservation_in_full(store, queue, clock):
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(
        partition.reservations["res-1"], reason="quarterly", topology_gen=7
    )
    _, body = post(store, queue, clock, {"unitIds": [UNITS[3]]})
    assert (body["endsAt"], body["contractRef"]) == ("2026-12-29T12:00:00Z", "C-1")
    assert (body["reason"], body["topologyGen"]) == ("quarterly", 7)


def test_a_reclaim_conditions_on_the_nodes_topology_generation_as_read(store, queue, clock):
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, topology_gen=4)
    post(store, queue, clock, {"unitIds": [UNITS[0]]})
    [write] = store.audit
    assert (write.topology.node_id, write.topology.topology_gen) == ("node-a", 4)


def test_units_outside_are_named_in_the_unit_ids_field(store, queue, clock):
    with pytest.raises(UnitsNotInReservation) as refused:
        post(store, queue, clock, {"unitIds": ["0000:0a:00.0"]})
    assert [d.field for d in refused.value.details] == ["unitIds[0]"]


def test_units_outside_are_each_named_in_the_message(store, queue, clock):
    with pytest.raises(UnitsNotInReservation) as refused:
        post(store, queue, clock, {"unitIds": [UNITS[0], "0000:0a:00.0", "0000:0b:00.0"]})
    assert refused.value.message == "units not in reservation res-1: 0000:0a:00.0, 0000:0b:00.0"
    assert [d.field for d in refused.value.details] == ["unitIds[1]", "unitIds[2]"]


def test_a_dry_run_refusal_keeps_nothing_under_the_key(store, queue, clock):
    partition = store.nodes["node-a"]
    active = partition.reservations["res-1"]
    partition.reservations["res-1"] = replace(active, status=ReservationStatus.CANCELLED)
    with pytest.raises(ReservationNotActive):
        post(store, queue, clock, {"unitIds": [UNITS[0]], "dryRun": True}, key="k-1")
    assert store.answers == {}


def test_two_keys_of_one_api_key_are_two_requests(store, queue, clock):
    assert post(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1")[0] == 200
    assert post(store, queue, clock, {"unitIds": [UNITS[3]]}, key="k-2")[0] == 200
    assert len(store.audit) == 2


def test_one_key_for_the_same_body_on_another_reservation_is_422(store, queue, clock):
    store.nodes["node-a"].reservations["res-2"] = reservation("res-2", reserved=(), released=())
    post(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1")
    store.nodes["node-a"].reservations["res-2"] = reservation("res-2")
    with pytest.raises(IdempotencyKeyReused):
        post(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1", res="res-2")


@pytest.mark.parametrize("jitter", ["lowest", "highest"])
def test_lost_races_wait_a_growing_bounded_jittered_time(store, queue, clock, monkeypatch, jitter):
    # Full jitter: a wait is drawn from [0, bound]; pin the draw to either end.
    monkeypatch.setattr(
        retries.random, "uniform", lambda low, high: low if jitter == "lowest" else high
    )
    conflicting = Conflicting(clock)
    conflicting.nodes = store.nodes
    conflicting.losses = MAX_ATTEMPTS
    waits: list[float] = []
    with pytest.raises(Conflict):
        post(conflicting, queue, clock, {"unitIds": [UNITS[0]]}, sleep=waits.append)
    assert len(waits) == MAX_ATTEMPTS
    if jitter == "lowest":
        assert waits == [0] * MAX_ATTEMPTS
    else:
        assert waits == sorted(waits)  # longer after each loss
        assert len(set(waits)) > 1
        assert waits[0] > 0
        assert max(waits) <= 0.4
        assert sum(waits) <= 1.5


def test_a_listed_unit_shows_its_gpu_model_name(store, clock):
    partition = store.nodes["node-a"]
    partition.units[UNITS[0]] = replace(partition.units[UNITS[0]], gpu_model_name="H100 SXM")
    [view] = [u for u in list_units(BROKER, "node-a", store, NOW) if u.id == UNITS[0]]
    assert view.gpu_model_name == "H100 SXM"


def test_a_spanning_workload_reclaimed_through_two_reservations_at_once_is_terminated_once(
    clock, queue
):
    store = FakeTable(clock)
    store.add(
        Node("node-a", "org-acme", queue_url=QUEUE),
        [unit(UNITS[0], "vm:vm-span"), unit(UNITS[1], "vm:vm-span")],
        [
            reservation("res-1", reserved=(UNITS[0],), released=(UNITS[0],)),
            reservation("res-2", reserved=(UNITS[1],), released=(UNITS[1],)),
        ],
        [workload("vm-span", (UNITS[0], UNITS[1]))],
    )

    def post(res: str, unit_id: str) -> dict:
        body = RawBody(json.dumps({"unitIds": [unit_id]}))
        return json.loads(
            reclaim(BROKER, "node-a", res, body, None, ports(store, clock, queue)).body
        )

    inner: list[dict] = []
    # res-2's reclaim commits between res-1's read and its write.
    store.between_read_and_write.append(lambda: inner.append(post("res-2", UNITS[1])))
    outer = post("res-1", UNITS[0])

    assert inner[0]["terminated"] == outer["terminated"] == ["vm-span"]
    [message] = queue.sent(QUEUE)
    span = store.nodes["node-a"].workloads["vm-span"]
    assert (span.state, span.termination.id) == (WorkloadState.TERMINATING, message.termination_id)
    assert len(store.audit) == 2  # both reclaims took their units back


def test_a_late_report_leaves_a_unit_another_workload_holds_by_now(store):
    partition = store.nodes["node-a"]
    partition.workloads["vm-term"] = replace(
        partition.workloads["vm-term"], unit_ids=(UNITS[3], UNITS[4])
    )
    partition.workloads.pop("vm-res")  # UNITS[3] has since gone to vm-new
    partition.units[UNITS[3]] = replace(partition.units[UNITS[3]], claimed_by="vm:vm-new")
    report = TerminationReport(
        termination_id="t-old",
        node_id="node-a",
        workload_id="vm-term",
        outcome="terminated",
        reported_at=NOW,
    )
    assert apply_report(report, NOW, store, store) == "closed"
    assert "vm-term" not in partition.workloads
    assert partition.units[UNITS[3]].claimed_by == "vm:vm-new"
    assert partition.units[UNITS[4]].claimed_by is None

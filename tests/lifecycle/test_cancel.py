"""Cancel over the fakes: every rule of the contract's cancel, in milliseconds."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import IdempotencyKeyReused, InvalidRequest, NotFound
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle.errors import ReservationNotActive
from reservations.nodes.models.partition import ReservationStatus
from reservations.nodes.models.writes import TopologyRead
from reservations.nodes.rules.units import governing_reservation
from tests.support.fakes import FakeTable, ports
from tests.support.use_cases import BROKER, NOW, OPERATOR, OWNER, STRANGER, UNITS
from tests.support.writes import cancel

pytestmark = pytest.mark.disable_socket

WRITE = frozenset({"reservation.read", "reservation.capacity", "reservation.write"})
OWNER_W, OPERATOR_W, BROKER_W, STRANGER_W = (
    replace(caller, permissions=WRITE) for caller in (OWNER, OPERATOR, BROKER, STRANGER)
)


def run(store, clock, body=None, *, caller=OWNER_W, node="node-a", res="res-1", key=None):
    outcome = cancel(caller, node, res, RawBody(body), key, ports(store, clock))
    return outcome.status, json.loads(outcome.body), outcome.body


def stored(store: FakeTable):
    """res-1 wherever it is: in the node's partition, or (cancelled) in its history."""
    partition = store.nodes["node-a"]
    return partition.reservations.get("res-1") or partition.history["res-1"]


def _with_reservation(store: FakeTable, **changes: object) -> None:
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(partition.reservations["res-1"], **changes)


# --- who may --------------------------------------------------------------------------------


@pytest.mark.parametrize("caller", [OWNER_W, OPERATOR_W])
def test_the_operator_and_the_node_owner_may_cancel(store, clock, caller):
    assert run(store, clock, caller=caller)[0] == 200


@pytest.mark.parametrize(
    ("caller", "node", "res"),
    [
        (BROKER_W, "node-a", "res-1"),  # a manager may release and reclaim, never cancel
        (STRANGER_W, "node-a", "res-1"),
        (OWNER_W, "node-x", "res-1"),
        (OWNER_W, "node-a", "res-x"),
        (OWNER_W, "node-a", "res/1"),
        (OWNER, "node-a", "res-1"),  # read and capacity, no reservation.write
    ],
)
def test_everyone_else_gets_the_one_404_and_nothing_changes(store, clock, caller, node, res):
    with pytest.raises(NotFound):
        run(store, clock, caller=caller, node=node, res=res)
    assert (store.writes, store.changes) == (0, [])
    assert stored(store).status is ReservationStatus.ACTIVE


def test_a_key_without_the_permission_hears_404_before_a_bad_body_and_before_the_read(store, clock):
    with pytest.raises(NotFound):
        run(store, clock, "{", caller=OWNER)
    assert store.reads == 0
    with pytest.raises(InvalidRequest):
        run(store, clock, '{"reasn": "typo"}', caller=OPERATOR_W)
    assert store.reads == 0


def test_an_org_that_may_not_cancel_on_the_node_hears_404_before_a_bad_body(store, clock):
    """The broker manages res-1 and holds reservation.write, but only the operator and the
    owner cancel: 404 before the body is read (the contract's order)."""
    for caller in (BROKER_W, STRANGER_W):
        with pytest.raises(NotFound):
            run(store, clock, '{"reasn": "typo"}', caller=caller)
    with pytest.raises(InvalidRequest):
        run(store, clock, '{"reasn": "typo"}')  # the owner: its one read, then the body
    assert (store.reads, store.writes) == (3, 0)


# --- the body -------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [None, "", "  \n", "{}", '{"reason": null}', '{"reason": "x"}'])
def test_an_empty_body_or_an_optional_reason_is_fine(store, clock, body):
    assert run(store, clock, body)[0] == 200


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"reasn": "typo"}', "reasn"),
        ('{"reason": 7}', "reason"),
        (json.dumps({"reason": "x" * 1001}), "reason"),
        ("[]", "body"),
        ("{", "body"),
        ('{"reason": "a", "reason": "b"}', "reason"),
    ],
)
def test_a_bad_body_is_400_naming_the_field(store, clock, body, field):
    with pytest.raises(InvalidRequest) as refused:
        run(store, clock, body)
    assert refused.value.details[0].field == field
    assert (store.reads, store.writes) == (1, 0)  # the owner's read, no write


# --- when -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        {"status": ReservationStatus.PENDING, "starts_at": NOW + timedelta(days=1)},
        {},  # active
        {"status": ReservationStatus.NEEDS_REVIEW},
        {"starts_at": NOW + timedelta(days=1)},  # stored active, term not started
    ],
)
def test_pending_active_and_needs_review_may_be_cancelled(store, clock, changes):
    _with_reservation(store, **changes)
    status, body, _ = run(store, clock)
    assert (status, body["status"]) == (200, "cancelled")


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"status": ReservationStatus.CANCELLED}, "is cancelled"),
        ({"status": ReservationStatus.EXPIRED}, "is expired"),
        ({"ends_at": NOW}, "is expired"),  # active, but its end has passed
        (
            {"status": ReservationStatus.PENDING, "starts_at": NOW - timedelta(days=9),
             "ends_at": NOW - timedelta(days=1)},
            "is expired",
        ),
    ],
)  # fmt: skip
def test_an_ended_reservation_is_409_naming_its_status(store, clock, changes, says):
    _with_reservation(store, **changes)
    with pytest.raises(ReservationNotActive, match=says):
        run(store, clock)
    assert store.changes == []


# --- what it does ---------------------------------------------------------------------------


def test_it_becomes_cancelled_with_nothing_released_and_governs_no_unit(store, clock):
    workloads_before = dict(store.nodes["node-a"].workloads)
    units_before = dict(store.nodes["node-a"].units)
    status, body, _ = run(store, clock, '{"reason": "contract ended"}')
    assert status == 200
    assert (body["status"], body["releasedUnitIds"]) == ("cancelled", [])
    assert body["reservedUnitIds"] == UNITS
    assert body["updatedAt"] == "2026-11-29T12:00:00Z"
    assert "reason" not in body  # the reservation's own reason; the cancel's is audited
    after = stored(store)
    assert (after.status, after.released_unit_ids, after.version) == (
        ReservationStatus.CANCELLED,
        (),
        2,
    )
    assert "res-1" not in store.nodes["node-a"].reservations  # moved to the node's history
    assert after.retained_until == after.updated_at + timedelta(days=400)
    node = store.nodes["node-a"].node
    assert all(governing_reservation(u, [after], node, NOW) is None for u in UNITS)
    # Running workloads keep running (even the spot ones); units keep their claims.
    assert store.nodes["node-a"].workloads == workloads_before
    assert store.nodes["node-a"].units == units_before


def test_the_audit_record_names_the_caller_the_reason_and_the_status_change(store, clock):
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, topology_gen=3)
    run(store, clock, '{"reason": "contract ended"}', caller=OPERATOR_W)
    [change] = store.changes
    assert (change.action, change.caller_org_id, change.caller_key_id) == (
        "cancel",
        "org-op",
        "key-op",
    )
    assert change.reason == "contract ended"
    assert (change.status_before, change.status_after) == (
        ReservationStatus.ACTIVE,
        ReservationStatus.CANCELLED,
    )
    assert (change.released_before, change.released_after) == (tuple(UNITS[:3]), ())
    # Written only if the node's topology is still the one the status was read from.
    assert change.topology == TopologyRead("node-a", 3)


def test_the_cancelled_event_carries_the_reason_and_the_status_it_ended(store, clock):
    run(store, clock, '{"reason": "contract ended"}', caller=OPERATOR_W)
    [cancelled] = store.events
    assert cancelled.event.type.value == "reservation.cancelled"
    assert cancelled.event.data["reason"] == "contract ended"
    assert cancelled.event.data["previousStatus"] == "active"


def test_a_cancel_that_lost_to_another_cancel_is_409_on_the_retry(store, clock):
    store.between_read_and_write.append(
        lambda: _with_reservation(store, status=ReservationStatus.CANCELLED, version=2)
    )
    with pytest.raises(ReservationNotActive, match="cancelled"):
        run(store, clock)
    assert store.reads == 2
    assert store.changes == []


# --- idempotency ----------------------------------------------------------------------------


def test_no_body_and_an_empty_object_are_the_same_request_for_a_key(store, clock):
    first = run(store, clock, None, key="c-1")
    again = run(store, clock, "{}", key="c-1")
    assert again[2] == first[2]
    assert len(store.changes) == 1
    with pytest.raises(IdempotencyKeyReused):
        run(store, clock, '{"reason": "another"}', key="c-1")


def test_a_second_cancel_is_409_without_a_key_and_the_first_answer_with_it(store, clock):
    first = run(store, clock, key="c-2")
    assert run(store, clock, key="c-2")[2] == first[2]
    with pytest.raises(ReservationNotActive, match="is cancelled"):
        run(store, clock)


def test_a_cancel_hands_the_store_what_decides_until_when_its_orgs_stay_named(store, clock):
    # The orgs res-1 names stay named while another reservation naming them does: the
    # write carries those as read, on the node's version as read, with the cancel itself.
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, version=6)
    partition.reservations["res-2"] = replace(partition.reservations["res-1"], id="res-2")
    partition.reservations["res-3"] = replace(
        partition.reservations["res-1"], id="res-3", allowed_org_ids=("org-x",),
        managing_org_ids=(),
    )  # fmt: skip
    run(store, clock)
    [change] = store.changes
    assert change.node_version == 6
    # res-2 names them as long as res-1 did: no moment moves, and res-2 must stay as read.
    assert change.named_until == {}
    res_2 = partition.reservations["res-2"]
    assert change.named_deciding == (ItemVersion(res_2.id, res_2.version),)
    assert change.ended is not None
    assert change.ended.status is ReservationStatus.CANCELLED


def test_a_cancel_naming_orgs_alone_brings_them_forward_to_its_retentions_end(store, clock):
    # No other reservation names them: each is named until the cancel plus the retention.
    before = store.nodes["node-a"].reservations["res-1"]
    run(store, clock)
    [change] = store.changes
    until = clock() + timedelta(days=400)
    orgs = (*before.allowed_org_ids, *before.managing_org_ids)
    assert orgs
    assert change.named_until == dict.fromkeys(orgs, until)
    assert change.named_deciding == ()

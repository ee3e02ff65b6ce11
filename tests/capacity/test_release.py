"""Release over the fakes: every rule of the contract's release, in milliseconds."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import Conflict, IdempotencyKeyReused, InvalidRequest, NotFound
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.lifecycle.errors import ReservationNotActive, UnitsNotInReservation
from reservations.nodes.models.partition import ReservationStatus, Tier
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import (
    AUDIENCE,
    BROKER,
    NOW,
    OPERATOR,
    OWNER,
    STRANGER,
    UNITS,
)
from tests.support.writes import release

pytestmark = pytest.mark.disable_socket


def run(store, clock, unit_ids, *, caller=BROKER, node="node-a", res="res-1", key=None, **body):
    raw = RawBody(json.dumps({"unitIds": unit_ids, **body}))
    outcome = release(caller, node, res, raw, key, ports(store, clock))
    return outcome.status, json.loads(outcome.body), outcome.body


def stored(store: FakeTable):
    return store.nodes["node-a"].reservations["res-1"]


def _with_reservation(store: FakeTable, **changes: object) -> None:
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(partition.reservations["res-1"], **changes)


# --- who may: the one 404 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("caller", "node", "res"),
    [
        (STRANGER, "node-a", "res-1"),
        (AUDIENCE, "node-a", "res-1"),  # in allowedOrgIds, not managing: not allowed
        (BROKER, "node-x", "res-1"),
        (BROKER, "node-a", "res-x"),
        (BROKER, "node a", "res-1"),
        (replace(BROKER, permissions=frozenset({"reservation.read"})), "node-a", "res-1"),
    ],
)
def test_unknown_malformed_and_not_allowed_are_the_same_404(store, clock, caller, node, res):
    with pytest.raises(NotFound):
        run(store, clock, [UNITS[3]], caller=caller, node=node, res=res)
    assert (store.writes, store.changes) == (0, [])


@pytest.mark.parametrize("caller", [OWNER, OPERATOR, BROKER])
def test_owner_operator_and_managing_org_may_release(store, clock, caller):
    assert run(store, clock, [UNITS[3]], caller=caller)[0] == 200


def test_a_bad_body_is_400_after_the_read_but_a_key_without_capacity_hears_404(store, clock):
    no_capacity = replace(BROKER, permissions=frozenset({"reservation.read"}))
    with pytest.raises(NotFound):
        release(no_capacity, "node-a", "res-1", RawBody("{"), None, ports(store, clock))
    assert store.reads == 0
    with pytest.raises(InvalidRequest):
        run(store, clock, [])
    with pytest.raises(InvalidRequest, match="dryrun"):
        run(store, clock, [UNITS[3]], dryrun=True)
    assert store.reads == 2  # the manager's read settles it, before each body


# A reservation the node's partition lacks may be in its history: one read of that more.
@pytest.mark.parametrize(("caller", "res", "reads"), [(STRANGER, "res-1", 1), (BROKER, "res-x", 2)])
def test_an_org_that_may_not_release_here_hears_404_before_a_bad_body(
    store, clock, caller, res, reads
):
    with pytest.raises(NotFound):
        release(caller, "node-a", res, RawBody("{"), None, ports(store, clock))
    assert (store.reads, store.writes) == (reads, 0)


# --- 409 not active, 422 outside ------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"status": ReservationStatus.PENDING, "starts_at": NOW + timedelta(hours=1)}, "pending"),
        ({"status": ReservationStatus.CANCELLED}, "cancelled"),
        ({"status": ReservationStatus.NEEDS_REVIEW}, "needs-review"),
        ({"ends_at": NOW}, "expired"),
        ({"starts_at": NOW + timedelta(hours=1)}, "term has not started"),  # stored active
    ],
)
def test_a_reservation_that_is_not_active_now_is_409_naming_its_status(store, clock, changes, says):
    _with_reservation(store, **changes)
    with pytest.raises(ReservationNotActive, match=says):
        run(store, clock, [UNITS[3]])
    assert store.changes == []


def test_units_outside_the_reservation_are_422_naming_each(store, clock):
    _with_reservation(store, reserved_unit_ids=(UNITS[3],))
    with pytest.raises(UnitsNotInReservation, match=r"0000:04:00\.0, 0000:05:00\.0") as refused:
        run(store, clock, [UNITS[1], UNITS[3], UNITS[0]])
    assert [d.field for d in refused.value.details] == ["unitIds[0]", "unitIds[2]"]
    assert store.changes == []


# --- what it does -------------------------------------------------------------------------


def test_named_units_join_the_released_ones_and_nothing_running_is_touched(store, clock):
    workloads_before = dict(store.nodes["node-a"].workloads)
    units_before = dict(store.nodes["node-a"].units)
    status, body, _ = run(store, clock, [UNITS[4].upper(), UNITS[3]], reason="spare")
    assert status == 200
    assert body["releasedUnitIds"] == UNITS  # 04-06 before, 07 and 08 now; sorted
    assert body["updatedAt"] == "2026-11-29T12:00:00Z"
    assert body["status"] == "active"
    assert "terminated" not in body  # the reservation object, nothing else
    assert stored(store).released_unit_ids == tuple(UNITS)
    assert stored(store).version == 2
    # vm-res (reserved tier) still holds 07: the audience keeps it until it is free.
    assert store.nodes["node-a"].workloads == workloads_before
    assert store.nodes["node-a"].units == units_before


def test_a_release_naming_a_released_unit_and_a_new_one_lends_the_new_one(store, clock):
    # 04 is lent already, 07 is not: "already released is fine" must not swallow 07.
    status, body, _ = run(store, clock, [UNITS[0], UNITS[3]])
    assert status == 200
    assert body["releasedUnitIds"] == UNITS[:4]
    assert stored(store).released_unit_ids == tuple(UNITS[:4])
    assert stored(store).version == 2
    [change] = store.changes
    assert change.released_after == tuple(UNITS[:4])


def test_the_audit_record_names_the_caller_reason_units_and_releases(store, clock):
    run(store, clock, [UNITS[3]], reason="lab lends it")
    [change] = store.changes
    assert (change.action, change.caller_org_id, change.caller_key_id) == (
        "release",
        "org-broker",
        "key-broker",
    )
    assert change.reason == "lab lends it"
    assert change.unit_ids == (UNITS[3],)
    assert change.released_before == tuple(UNITS[:3])
    assert change.released_after == tuple(UNITS[:4])


def test_releasing_released_units_changes_nothing_but_is_still_audited(store, clock):
    before = stored(store)
    status, body, _ = run(store, clock, [UNITS[0], UNITS[1]])
    assert status == 200
    assert stored(store) == before  # not even updatedAt or the version moves
    assert body["updatedAt"] == "2026-11-27T12:00:00Z"
    [change] = store.changes
    assert not change.writes_reservation
    assert change.released_after is None


def test_a_dry_run_answers_the_reservation_as_it_would_be_and_changes_nothing(store, clock):
    status, body, _ = run(store, clock, [UNITS[3]], dryRun=True, key="\t not even valid")
    assert status == 200
    assert body["releasedUnitIds"] == UNITS[:4]
    assert body["updatedAt"] == "2026-11-29T12:00:00Z"
    assert (store.writes, store.changes, store.answers) == (0, [], {})
    assert stored(store).released_unit_ids == tuple(UNITS[:3])


# --- races and idempotency ------------------------------------------------------------------


def test_a_write_that_lost_a_race_reads_again_and_keeps_the_winners_change(store, clock):
    def concurrent_release() -> None:
        current = stored(store)
        _with_reservation(
            store, released_unit_ids=(*current.released_unit_ids, UNITS[4]), version=2
        )

    store.between_read_and_write.append(concurrent_release)
    status, body, _ = run(store, clock, [UNITS[3]])
    assert status == 200
    assert store.reads == 2
    assert body["releasedUnitIds"] == UNITS  # both releases landed
    assert stored(store).version == 3


def test_a_reservation_cancelled_between_read_and_write_is_409_on_the_retry(store, clock):
    store.between_read_and_write.append(
        lambda: _with_reservation(store, status=ReservationStatus.CANCELLED, version=2)
    )
    with pytest.raises(ReservationNotActive, match="cancelled"):
        run(store, clock, [UNITS[3]])
    assert store.changes == []


def test_losing_every_race_is_409_conflict_after_the_bounded_attempts(store, clock):
    for _ in range(MAX_ATTEMPTS):  # one concurrent writer after each read
        store.between_read_and_write.append(
            lambda: _with_reservation(store, version=stored(store).version + 1)
        )
    original = store.load_node

    def one_writer_per_read(node_id):
        pending, store.between_read_and_write = store.between_read_and_write, []
        snapshot = original(node_id)
        if pending:
            pending.pop(0)()
        store.between_read_and_write = pending
        return snapshot

    store.load_node = one_writer_per_read
    with pytest.raises(Conflict, match="kept changing while releasing"):
        run(store, clock, [UNITS[3]])
    assert store.reads == MAX_ATTEMPTS
    assert store.changes == []


def test_a_repeated_key_replays_the_first_answer_and_changes_nothing(
    store: FakeTable, clock: FakeClock
):
    first = run(store, clock, [UNITS[3]], key="k-1", reason="r")
    clock.now = NOW + timedelta(minutes=5)
    again = run(store, clock, [UNITS[3].upper()], key="k-1", reason="r")
    assert again[2] == first[2]  # byte for byte
    assert len(store.changes) == 1
    with pytest.raises(IdempotencyKeyReused):
        run(store, clock, [UNITS[4]], key="k-1")


def test_a_kept_refusal_is_replayed_even_after_the_state_changed(store, clock):
    _with_reservation(store, status=ReservationStatus.NEEDS_REVIEW)
    with pytest.raises(ReservationNotActive):
        run(store, clock, [UNITS[3]], key="k-2")
    _with_reservation(store, status=ReservationStatus.ACTIVE)
    status, body, _ = run(store, clock, [UNITS[3]], key="k-2")
    assert (status, body["code"]) == (409, "reservation_not_active")
    assert store.changes == []


def test_a_unit_under_a_reserved_workload_may_be_released(store, clock):
    assert store.nodes["node-a"].workloads["vm-res"].tier is Tier.RESERVED
    status, body, _ = run(store, clock, [UNITS[3]])
    assert status == 200
    assert UNITS[3] in body["releasedUnitIds"]

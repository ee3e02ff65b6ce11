"""PATCH over the fakes: every rule of the contract's change of a live reservation."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations import endpoints
from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import InvalidRequest, NotFound, PreconditionFailed
from reservations.kernel.pipeline import run_write
from reservations.kernel.times import format_time
from reservations.lifecycle.errors import (
    ReservationNotChangeable,
    UnitsNotInReservation,
    UnitsNotReservable,
)
from reservations.lifecycle.update import UPDATE
from reservations.lifecycle.views import reservation_etag
from reservations.nodes.errors import UnitsUnavailable
from reservations.nodes.models.partition import Node, ReservationStatus, WorkloadState
from reservations.webhooks.rules.fanout import body_for, orgs_to_notify
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import (
    AUDIENCE,
    BROKER,
    NOW,
    OPERATOR,
    OWNER,
    STRANGER,
    reservation,
    unit,
    workload,
)
from tests.support.writes import create_reservation, update_reservation

pytestmark = pytest.mark.disable_socket

WRITE = frozenset({"reservation.read", "reservation.capacity", "reservation.write"})
OWNER_W, OPERATOR_W, BROKER_W, AUDIENCE_W, STRANGER_W = (
    replace(caller, permissions=WRITE) for caller in (OWNER, OPERATOR, BROKER, AUDIENCE, STRANGER)
)
# res-1 holds 04 and 05 (04 released) for 30 days; res-next holds 05 from day 40 to 60;
# 06 is free, 07 is free but claimed by org-spot's VM, 08 is not reservable.
U4, U5, U6, U7, U8 = (f"0000:0{n}:00.0" for n in range(4, 9))
DAY = timedelta(days=1)


@pytest.fixture
def store(clock: FakeClock) -> FakeTable:
    store = FakeTable(clock)
    store.add(
        Node("node-a", "org-acme"),
        [
            unit(U4),
            unit(U5),
            unit(U6),
            unit(U7, "vm:vm-spot"),
            replace(unit(U8), alloc_class="mdev"),
        ],
        [
            reservation(reserved=(U4, U5), released=(U4,)),
            reservation(
                "res-next",
                ReservationStatus.PENDING,
                reserved=(U5,),
                released=(),
                starts_at=NOW + 40 * DAY,
                ends_at=NOW + 60 * DAY,
                allowed_org_ids=("org-next",),
                managing_org_ids=(),
            ),
        ],
        [workload("vm-spot", (U7,)), workload("vm-on-4", (U4,))],
    )
    return store


def run(store, clock, body, *, caller=OWNER_W, node="node-a", res="res-1", key=None):
    text = body if isinstance(body, str) else json.dumps(body)
    outcome = update_reservation(caller, node, res, RawBody(text), key, ports(store, clock))
    return outcome.status, json.loads(outcome.body)


def stored(store: FakeTable, res: str = "res-1"):
    return store.nodes["node-a"].reservations[res]


def at(days: float) -> str:
    return format_time(NOW + timedelta(days=days))


def refused(store, clock, error, body, **kwargs):
    """The refusal, with nothing written and no event."""
    before = dict(store.nodes["node-a"].reservations)
    updated, events = list(store.updated), list(store.events)
    with pytest.raises(error) as raised:
        run(store, clock, body, **kwargs)
    assert (store.updated, store.events) == (updated, events)
    assert store.nodes["node-a"].reservations == before
    return raised.value


# --- who may --------------------------------------------------------------------------------


@pytest.mark.parametrize("caller", [OWNER_W, OPERATOR_W])
def test_the_operator_and_the_node_owner_may_change_a_reservation(store, clock, caller):
    status, body = run(store, clock, {"contractRef": "C-2"}, caller=caller)
    assert (status, body["contractRef"]) == (200, "C-2")
    assert stored(store).contract_ref == "C-2"


@pytest.mark.parametrize(
    ("caller", "node", "res"),
    [
        (BROKER_W, "node-a", "res-1"),  # managers release and reclaim; they do not change terms
        (AUDIENCE_W, "node-a", "res-1"),
        (STRANGER_W, "node-a", "res-1"),
        (OWNER, "node-a", "res-1"),  # no reservation.write
        (OWNER_W, "node-x", "res-1"),
        (OWNER_W, "node-a", "res-x"),
        (OWNER_W, "node-a", "res/1"),
    ],
)
def test_everyone_else_gets_the_one_404_and_nothing_changes(store, clock, caller, node, res):
    refused(store, clock, NotFound, {"endsAt": at(35)}, caller=caller, node=node, res=res)


def test_a_manager_hears_404_before_anything_about_the_body_or_the_reservation(store, clock):
    refused(store, clock, NotFound, "{", caller=BROKER_W)
    refused(store, clock, NotFound, {"startsAt": None}, caller=BROKER_W)


# --- the body -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body"),
        ({"startsAt": None}, "startsAt"),
        ({"allowedOrgIds": None}, "allowedOrgIds"),
        ({"allowedOrgIds": []}, "allowedOrgIds"),
        ({"managingOrgIds": None}, "managingOrgIds"),
        ({"addUnitIds": None}, "addUnitIds"),
        ({"removeUnitIds": []}, "removeUnitIds"),
        ({"endsat": at(35)}, "endsat"),
        ({"addUnitIds": [U6, U6.upper()]}, "addUnitIds[1]"),
        ({"addUnitIds": [U6], "removeUnitIds": [U6]}, "addUnitIds[0]"),
        ({"allowedOrgIds": ["org-a", "org-a"]}, "allowedOrgIds[1]"),
        ({"startsAt": at(3), "endsAt": at(2)}, "endsAt"),
        ({"endsAt": "2026-02-30T00:00:00Z"}, "endsAt"),
        ({"endsAt": at(-1)}, "endsAt"),  # not in the future
        ({"startsAt": at(-1)}, "startsAt"),  # more than 5 minutes in the past
        ({"contractRef": "x" * 201}, "contractRef"),
    ],
)
def test_a_body_check_is_a_400_naming_the_field(store, clock, body, field):
    error = refused(store, clock, InvalidRequest, body)
    assert field in [problem.field for problem in error.details]


# --- what it changes ------------------------------------------------------------------------


def test_extending_writes_the_reservation_and_its_event(store, clock):
    status, body = run(store, clock, {"endsAt": at(35), "reason": "lab extended"})
    assert (status, body["endsAt"], body["reason"]) == (200, at(35), "lab extended")
    after = stored(store)
    assert (after.ends_at, after.version, after.updated_at) == (NOW + 35 * DAY, 2, NOW)
    (event,) = store.events
    assert event.event.type == "reservation.updated"
    assert event.event.data["changes"] == {
        "endsAt": {"from": at(30), "to": at(35)},
        "reason": {"from": None, "to": "lab extended"},
    }
    assert event.event.data["reason"] == "lab extended"
    assert event.audience_org_ids == {"org-lab", "org-broker"}
    assert event.views == {}


def test_extending_over_the_next_reservation_of_a_unit_is_refused_naming_it(store, clock):
    error = refused(store, clock, UnitsUnavailable, {"endsAt": at(45)})
    assert [p.field for p in error.details] == ["endsAt"]
    assert error.details[0].problem.startswith(f"{U5}: held by reservation res-next")
    assert error.message == f"units unavailable: {U5}"


def test_open_ending_is_extending(store, clock):
    refused(store, clock, UnitsUnavailable, {"endsAt": None})
    run(store, clock, {"removeUnitIds": [U5]})
    status, body = run(store, clock, {"endsAt": None})
    assert (status, "endsAt" in body) == (200, False)
    assert stored(store).ends_at is None


def test_shortening_never_fails_for_overlap(store, clock):
    # res-next made to overlap res-1 (as a fleet file may have it): shortening still goes.
    partition = store.nodes["node-a"]
    partition.reservations["res-next"] = replace(stored(store, "res-next"), starts_at=NOW + DAY)
    assert run(store, clock, {"endsAt": at(20)})[0] == 200
    assert stored(store).ends_at == NOW + 20 * DAY


def test_contract_ref_and_reason_are_removed_by_null(store, clock):
    status, body = run(store, clock, {"contractRef": None})
    assert (status, "contractRef" in body, stored(store).contract_ref) == (200, False, None)
    (event,) = store.events
    assert event.event.data["changes"] == {"contractRef": {"from": "C-1", "to": None}}


def test_a_removed_unit_leaves_released_unit_ids_and_nothing_is_terminated(store, clock):
    status, body = run(store, clock, {"removeUnitIds": [U4]})
    assert (status, body["reservedUnitIds"], body["releasedUnitIds"]) == (200, [U5], [])
    assert store.nodes["node-a"].workloads["vm-on-4"].state is WorkloadState.RUNNING
    assert store.nodes["node-a"].units[U4].claimed_by is None  # as it was: never touched
    (event,) = store.events
    assert event.event.data["changes"] == {
        "reservedUnitIds": {"from": [U4, U5], "to": [U5]},
        "releasedUnitIds": {"from": [U4], "to": []},
    }


def test_an_added_unit_is_held_from_the_commit(store, clock):
    status, body = run(store, clock, {"addUnitIds": [U6.upper()]})
    assert (status, body["reservedUnitIds"]) == (200, [U4, U5, U6])
    (write,) = store.updated
    assert [u.id for u in write.units] == [U6]  # the added unit, checked at its version
    # A create of 06 over the term is now refused.
    create = {"unitIds": [U6], "allowedOrgIds": ["org-x"], "endsAt": at(5)}
    with pytest.raises(UnitsUnavailable):
        create_reservation(
            OWNER_W, "node-a", RawBody(json.dumps(create)), None, ports(store, clock)
        )


def test_a_unit_claimed_outside_the_new_audience_is_refused_while_the_term_includes_now(
    store, clock
):
    error = refused(store, clock, UnitsUnavailable, {"addUnitIds": [U7]})
    assert error.details[0].field == "addUnitIds[0]"
    # The claiming workload's org joins the audience in the same change: it may stay.
    body = {"addUnitIds": [U7], "allowedOrgIds": ["org-lab", "org-spot"]}
    assert run(store, clock, body)[0] == 200


def test_a_claim_does_not_count_for_a_reservation_still_to_come(store, clock):
    body = {"addUnitIds": [U7]}
    assert run(store, clock, body, res="res-next")[0] == 200


def test_adding_a_unit_not_reservable_or_not_on_the_node_is_a_422_naming_each(store, clock):
    error = refused(store, clock, UnitsNotReservable, {"addUnitIds": [U6, U8, "0000:0f:00.0"]})
    assert [p.field for p in error.details] == ["addUnitIds[1]", "addUnitIds[2]"]


def test_removing_a_unit_it_does_not_hold_is_a_422_naming_it(store, clock):
    error = refused(store, clock, UnitsNotInReservation, {"removeUnitIds": [U4, U6]})
    assert U6 in error.message
    assert [p.field for p in error.details] == ["removeUnitIds[1]"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"removeUnitIds": [U4, U5]}, "removeUnitIds"),
        ({"addUnitIds": [U4]}, "addUnitIds[0]"),
        ({"startsAt": at(1)}, "startsAt"),  # active: its start has passed
    ],
)
def test_a_change_the_stored_reservation_does_not_allow_is_a_409_naming_the_field(
    store, clock, body, field
):
    error = refused(store, clock, ReservationNotChangeable, body)
    assert [p.field for p in error.details] == [field]


def test_an_end_not_after_the_stored_start_is_a_409_naming_end_at(store, clock):
    error = refused(store, clock, ReservationNotChangeable, {"endsAt": at(39)}, res="res-next")
    assert [p.field for p in error.details] == ["endsAt"]
    error = refused(store, clock, ReservationNotChangeable, {"startsAt": at(61)}, res="res-next")
    assert [p.field for p in error.details] == ["startsAt"]


def test_more_than_32_units_after_the_change_is_a_409(clock):
    units = [f"0000:{n:02x}:00.0" for n in range(1, 34)]
    store = FakeTable(clock)
    store.add(
        Node("node-a", "org-acme"),
        [unit(u) for u in units],
        [reservation(reserved=tuple(units[:32]), released=())],
    )
    error = refused(store, clock, ReservationNotChangeable, {"addUnitIds": [units[32]]})
    assert [p.field for p in error.details] == ["addUnitIds"]


def test_a_pending_reservation_may_move_its_start_and_begins_at_once_when_it_is_now(store, clock):
    status, body = run(store, clock, {"startsAt": at(38)}, res="res-next")
    assert (status, body["startsAt"], body["status"]) == (200, at(38), "pending")
    # Moved to now, it would overlap res-1 on 05 until res-1 lets 05 go.
    refused(store, clock, UnitsUnavailable, {"startsAt": format_time(NOW)}, res="res-next")
    assert run(store, clock, {"removeUnitIds": [U5]})[0] == 200
    status, body = run(store, clock, {"startsAt": format_time(NOW)}, res="res-next")
    assert (body["status"], stored(store, "res-next").status) == (
        "active",
        ReservationStatus.ACTIVE,
    )


@pytest.mark.parametrize(
    ("changes", "status"),
    [
        ({"ends_at": NOW - DAY}, "expired"),
        ({"status": ReservationStatus.NEEDS_REVIEW}, "needs-review"),
    ],
)
def test_only_a_pending_or_active_reservation_may_change(store, clock, changes, status):
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(stored(store), **changes)
    error = refused(store, clock, ReservationNotChangeable, {"contractRef": "C-2"})
    assert status in error.message
    assert [p.field for p in error.details] == ["status"]


def test_a_patch_that_changes_nothing_writes_nothing_and_answers_the_reservation(store, clock):
    body = {"endsAt": at(30), "contractRef": "C-1", "allowedOrgIds": ["org-lab"]}
    status, answer = run(store, clock, body)
    assert (status, answer["endsAt"]) == (200, at(30))
    assert answer["updatedAt"] == format_time(NOW - 2 * DAY)  # as it was
    assert (store.writes, store.events, stored(store).version) == (0, [], 1)


# --- who sees the event ---------------------------------------------------------------------


def test_an_org_the_change_removes_sees_a_reduced_event(store, clock):
    body = {"allowedOrgIds": ["org-lab-2"], "managingOrgIds": ["org-lab"]}
    assert run(store, clock, body)[0] == 200
    (event,) = store.events
    # org-lab moved from the audience to the managers: still named, it sees it whole.
    assert event.audience_org_ids == {"org-lab", "org-lab-2", "org-broker"}
    assert event.views == {"org-broker": {"changes": {"managingOrgIds": {"removed": True}}}}
    reduced = event.seen_by("org-broker")
    assert reduced.data == {"changes": {"managingOrgIds": {"removed": True}}}
    assert "org-lab-2" not in json.dumps(reduced.envelope(show_key_id=False))
    assert event.seen_by("org-lab") == event.event
    assert event.seen_by(None) == event.event  # the operator, the bus


def test_an_org_removed_from_both_lists_sees_both_and_the_owner_sees_it_whole(store, clock):
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(stored(store), managing_org_ids=("org-lab",))
    assert run(store, clock, {"allowedOrgIds": ["org-x"], "managingOrgIds": []})[0] == 200
    (event,) = store.events
    assert event.views == {
        "org-lab": {
            "changes": {"allowedOrgIds": {"removed": True}, "managingOrgIds": {"removed": True}}
        }
    }
    assert event.seen_by("org-acme") == event.event


def test_a_newly_named_org_may_list_the_node(store, clock):
    assert "org-new" not in store.nodes["node-a"].named
    assert run(store, clock, {"allowedOrgIds": ["org-lab", "org-new"]})[0] == 200
    assert store.nodes["node-a"].named["org-new"] >= NOW + 30 * DAY


# --- idempotency and races ------------------------------------------------------------------


def test_a_repeat_with_the_same_key_is_replayed_and_does_nothing(store, clock):
    first = run(store, clock, {"endsAt": at(35)}, key="k-1")
    clock.now += timedelta(seconds=30)
    again = run(store, clock, {"endsAt": at(35)}, key="k-1")
    assert first == again
    assert (len(store.updated), len(store.events)) == (1, 1)


def test_a_kept_refusal_is_replayed_under_its_key(store, clock):
    with pytest.raises(ReservationNotChangeable):
        run(store, clock, {"startsAt": at(1)}, key="k-2")
    status, body = run(store, clock, {"startsAt": at(1)}, key="k-2")
    assert (status, body["code"]) == (409, "reservation_not_changeable")
    assert (store.updated, store.events) == ([], [])


def test_a_create_between_the_read_and_the_write_is_seen_on_the_retry(store, clock):
    def create_on_6() -> None:
        body = {"unitIds": [U6], "allowedOrgIds": ["org-x"], "endsAt": at(5)}
        create_reservation(OWNER_W, "node-a", RawBody(json.dumps(body)), None, ports(store, clock))

    store.between_read_and_write.append(create_on_6)
    refused_error = None
    try:
        run(store, clock, {"addUnitIds": [U6]})
    except UnitsUnavailable as error:
        refused_error = error
    assert refused_error is not None  # decided again on the node with the create
    assert U6 not in stored(store).reserved_unit_ids


def test_a_webhook_of_a_removed_org_carries_its_reduced_view(store, clock):
    assert run(store, clock, {"managingOrgIds": []})[0] == 200
    (event,) = store.events
    assert "org-broker" in orgs_to_notify(event, "org-op")
    sent = json.loads(body_for(event, "org-broker", "org-op"))
    assert sent["data"] == {
        "actor": {"orgId": "org-acme"},
        "changes": {"managingOrgIds": {"removed": True}},
    }
    for whole in ("org-op", "org-acme", "org-lab"):
        assert json.loads(body_for(event, whole, "org-op"))["data"]["changes"] == {
            "managingOrgIds": {"from": ["org-broker"], "to": []}
        }


# --- versions -------------------------------------------------------------------------------


def _patch_matching(store, clock, body, if_match):
    route = endpoints.UPDATE_RESERVATION.at(nodeId="node-a", reservationId="res-1")
    raw = RawBody(json.dumps(body))
    return run_write(UPDATE, route, OWNER_W, raw, None, ports(store, clock), if_match)


def test_a_change_answers_its_new_etag_and_a_no_op_keeps_the_one_it_had(store, clock):
    before = reservation_etag(stored(store), store.nodes["node-a"].node, NOW)
    same = _patch_matching(store, clock, {"contractRef": "C-1"}, f'"{before}"')
    assert (dict(same.headers)["ETag"], json.loads(same.body)["etag"]) == (f'"{before}"', before)
    changed = _patch_matching(store, clock, {"contractRef": "C-2"}, f'"{before}"')
    after = reservation_etag(stored(store), store.nodes["node-a"].node, NOW)
    assert after != before
    assert (dict(changed.headers)["ETag"], json.loads(changed.body)["etag"]) == (
        f'"{after}"',
        after,
    )


@pytest.mark.parametrize(
    "body",
    [{"startsAt": at(1)}, {"endsAt": at(45)}, {"removeUnitIds": ["0000:0f:00.0"]}],
)
def test_a_stale_if_match_is_412_before_any_409_or_422_and_changes_nothing(store, clock, body):
    with pytest.raises(PreconditionFailed):
        _patch_matching(store, clock, body, '"not-the-tag"')
    assert (store.updated, store.events) == ([], [])

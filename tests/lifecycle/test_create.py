"""Create over the fakes: who may, the body, the term, overlap and claims, races, keys."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import fields, replace
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import Conflict, IdempotencyKeyReused, InvalidRequest, NotFound
from reservations.kernel.idempotency.replay import REPLAYED
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.kernel.times import format_time
from reservations.kernel.writes import WriteConflict
from reservations.lifecycle.create import CREATE, new_reservation_id
from reservations.lifecycle.errors import UnitsNotReservable
from reservations.lifecycle.models import parse_create_request
from reservations.lifecycle.views import version_tag
from reservations.nodes.errors import UnitsUnavailable
from reservations.nodes.models.partition import ReservationStatus, Tier, Unit
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.ports import AllPorts as Ports
from tests.support.use_cases import NOW, UNITS, reservation, unit, workload
from tests.support.writes import create_reservation

pytestmark = pytest.mark.disable_socket

WRITE = frozenset({"reservation.read", "reservation.write"})
OWNER = Caller("key-owner", "org-acme", WRITE, key_hash="hash-owner")
OPERATOR = Caller("key-op", "org-op", WRITE, platform_operator=True, key_hash="hash-op")
BROKER = Caller("key-broker", "org-broker", WRITE, key_hash="hash-broker")
FREE = ["0000:0b:00.0", "0000:0c:00.0", "0000:0d:00.0"]
MIG = "0000:0e:00.0"


@pytest.fixture
def free_store(store: FakeTable) -> FakeTable:
    """node-a as in conftest, plus three free reservable units and a mig unit."""
    partition = store.nodes["node-a"]
    partition.node = replace(partition.node, topology_gen=7)
    for unit_id in FREE:
        partition.units[unit_id] = unit(unit_id)
    partition.units[MIG] = Unit(
        MIG, "mig", "h100", 1, False, not_sellable_reason="held for the host"
    )
    return store


def create_ports(store: FakeTable, clock: FakeClock, ids: list[str] | None = None) -> Ports:
    made = iter(ids or [f"res-new{i}" for i in range(10)])
    return ports(store, clock, new_id=lambda: next(made))


def create(store, clock, *, caller=OWNER, node="node-a", key=None, **body):
    document = {"unitIds": FREE[:2], "allowedOrgIds": ["org-lab"], **body}
    raw = RawBody(json.dumps(document))
    return create_reservation(caller, node, raw, key, create_ports(store, clock))


# --- what a create makes ------------------------------------------------------------------


def test_a_create_stores_the_reservation_and_answers_201_with_its_location(free_store, clock):
    outcome = create(free_store, clock, managingOrgIds=["org-broker"], contractRef="C-9",
                     reason="new lab", endsAt=format_time(NOW + timedelta(days=30)))  # fmt: skip
    body = json.loads(outcome.body)
    assert outcome.status == 201
    stored = free_store.nodes["node-a"].reservations["res-new0"]
    tag = version_tag(stored.version, ReservationStatus.ACTIVE)  # the version stored, as shown
    assert outcome.headers == (
        ("Location", "/v1/nodes/node-a/reservations/res-new0"),
        ("ETag", f'"{tag}"'),
    )
    assert body == {
        "id": "res-new0", "nodeId": "node-a", "status": "active",
        "startsAt": format_time(NOW), "endsAt": format_time(NOW + timedelta(days=30)),
        "allowedOrgIds": ["org-lab"], "managingOrgIds": ["org-broker"],
        "reservedUnitIds": FREE[:2], "releasedUnitIds": [], "contractRef": "C-9",
        "reason": "new lab", "topologyGen": 7, "lending": None,
        "createdAt": format_time(NOW), "updatedAt": format_time(NOW), "etag": tag,
    }  # fmt: skip
    assert stored.status is ReservationStatus.ACTIVE
    assert (stored.created_at, stored.updated_at) == (NOW, NOW)
    assert stored.released_unit_ids == ()
    assert free_store.nodes["node-a"].node.version == 2  # two creates serialize on it
    [write] = free_store.created
    assert (write.caller_org_id, write.caller_key_id) == ("org-acme", "key-owner")
    assert sorted(u.id for u in write.units) == FREE[:2]


def test_a_create_that_starts_later_is_stored_pending(free_store, clock):
    starts = format_time(NOW + timedelta(days=2))
    body = json.loads(create(free_store, clock, startsAt=starts).body)
    assert (body["status"], body["startsAt"]) == ("pending", starts)
    assert free_store.nodes["node-a"].reservations["res-new0"].status is ReservationStatus.PENDING


def test_a_start_up_to_5_minutes_back_is_accepted_as_given(free_store, clock):
    starts = format_time(NOW - timedelta(minutes=5))
    assert json.loads(create(free_store, clock, startsAt=starts).body)["startsAt"] == starts


def test_unit_ids_are_stored_lower_case_and_sorted(free_store, clock):
    body = json.loads(create(free_store, clock, unitIds=["0000:0C:00.0", "0000:0b:00.0"]).body)
    assert body["reservedUnitIds"] == ["0000:0b:00.0", "0000:0c:00.0"]


def test_each_write_gets_a_fresh_uuid_for_its_audit_record_by_default():
    made = next(f for f in fields(Ports) if f.name == "new_id").default
    ids = {made() for _ in range(50)}  # type: ignore[operator]
    assert len(ids) == 50
    assert all(str(uuid.UUID(i)) == i for i in ids)


def test_reservation_ids_are_res_and_20_lowercase_letters_or_digits():
    ids = {new_reservation_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"res-[a-z0-9]{20}", i) for i in ids)


# --- who may: the one 404 -----------------------------------------------------------------


@pytest.mark.parametrize("caller", [OWNER, OPERATOR])
def test_the_owner_and_the_operator_may_create(free_store, clock, caller):
    assert create(free_store, clock, caller=caller).status == 201


@pytest.mark.parametrize(
    ("caller", "node"),
    [
        (BROKER, "node-a"),  # manages res-1 there, but only owner and operator create
        (
            replace(OWNER, permissions=frozenset({"reservation.read", "reservation.capacity"})),
            "node-a",
        ),
        (OWNER, "node-x"),
        (OWNER, "node a"),
    ],
)
def test_everyone_else_gets_the_same_404_and_nothing_is_written(free_store, clock, caller, node):
    with pytest.raises(NotFound):
        create(free_store, clock, caller=caller, node=node)
    assert free_store.writes == 0


def test_a_missing_permission_and_a_malformed_node_are_refused_before_any_read(free_store, clock):
    reader = replace(OWNER, permissions=frozenset({"reservation.read"}))
    for caller, node in ((reader, "node-a"), (OWNER, "node/a")):
        with pytest.raises(NotFound):
            create(free_store, clock, caller=caller, node=node, unitIds="bad body")
    assert free_store.reads == 0


# --- the body: 400 naming the field, before any read ----------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"unitIds": []}, "unitIds"),
        ({"unitIds": [f"0000:{i:02x}:00.0" for i in range(33)]}, "unitIds"),
        ({"unitIds": ["0000:0b:00.0", "0000:0B:00.0"]}, "unitIds[1]"),
        ({"unitIds": ["gpu0"]}, "unitIds[0]"),
        ({"allowedOrgIds": []}, "allowedOrgIds"),
        ({"allowedOrgIds": ["org-lab", "org-lab"]}, "allowedOrgIds[1]"),
        ({"allowedOrgIds": [f"org-{i}" for i in range(51)]}, "allowedOrgIds"),
        ({"managingOrgIds": ["bad org"]}, "managingOrgIds[0]"),
        ({"managingOrgIds": ["o", "p", "o"]}, "managingOrgIds[2]"),
        ({"startsAt": "tomorrow"}, "startsAt"),
        ({"startsAt": "2026-02-30T00:00:00Z"}, "startsAt"),
        ({"startsAt": format_time(NOW - timedelta(minutes=6))}, "startsAt"),
        ({"endsAt": format_time(NOW)}, "endsAt"),
        ({"startsAt": format_time(NOW + timedelta(days=2)),
          "endsAt": format_time(NOW + timedelta(days=1))}, "endsAt"),
        ({"startsAt": format_time(NOW - timedelta(minutes=4)),
          "endsAt": format_time(NOW - timedelta(minutes=1))}, "endsAt"),  # over already
        ({"contractRef": "c" * 201}, "contractRef"),
        ({"reason": "r" * 1001}, "reason"),
        ({"allowedOrgIDs": ["org-lab"]}, "allowedOrgIDs"),
        ({"unitIds": "0000:0b:00.0"}, "unitIds"),
    ],
)  # fmt: skip
def test_a_bad_body_is_a_400_naming_the_field_before_any_write(free_store, clock, body, field):
    with pytest.raises(InvalidRequest) as refused:
        create(free_store, clock, **body)
    assert field in [d.field for d in refused.value.details]
    # The owner's one read settles that its org owns the node; the operator needs none.
    assert (free_store.reads, free_store.writes) == (1, 0)
    with pytest.raises(InvalidRequest):
        create(free_store, clock, caller=OPERATOR, **body)
    assert (free_store.reads, free_store.writes) == (1, 0)


def test_an_org_that_may_not_create_on_the_node_hears_404_before_a_bad_body(free_store, clock):
    """The contract's order: 401, then 404 for an org that may not make this call on this
    node, then 400 for the body. org-broker holds reservation.write but owns no node."""
    for body in ({"unitIds": "not a list"}, {}):
        with pytest.raises(NotFound):
            create(free_store, clock, caller=BROKER, **body)
    with pytest.raises(NotFound):
        create(free_store, clock, node="node-unknown", unitIds="not a list")
    assert free_store.writes == 0


def test_a_missing_body_or_missing_audience_is_a_400(free_store, clock):
    for raw in (RawBody(None), RawBody(json.dumps({"unitIds": FREE[:1]}))):
        with pytest.raises(InvalidRequest):
            create_reservation(OWNER, "node-a", raw, None, create_ports(free_store, clock))


# --- 409 units_unavailable, then 422 units_not_reservable -------------------------------------


def _refusal(store, clock, error, **body):
    with pytest.raises(error) as refused:
        create(store, clock, **body)
    assert store.writes == 0
    return {d.field: d.problem for d in refused.value.details}


def test_a_unit_held_by_a_live_reservation_whose_term_overlaps_is_409(free_store, clock):
    details = _refusal(free_store, clock, UnitsUnavailable, unitIds=[FREE[0], UNITS[0]])
    assert list(details) == ["unitIds[1]"]
    assert "held by reservation res-1 (active)" in details["unitIds[1]"]
    assert UNITS[0] in details["unitIds[1]"]


@pytest.mark.parametrize(
    ("status", "starts", "ends", "held"),
    [
        (ReservationStatus.PENDING, 10, 20, True),  # pending, overlaps the new open end
        (ReservationStatus.NEEDS_REVIEW, -1, 20, True),
        (ReservationStatus.ACTIVE, -1, None, True),  # open-ended: overlaps all after it
        (ReservationStatus.CANCELLED, -1, 20, False),
        (ReservationStatus.ACTIVE, -10, -1, False),  # expired by the clock
        (ReservationStatus.PENDING, -10, -1, False),  # pending, both past: expired
    ],
)
def test_which_reservations_hold_a_unit_against_an_open_ended_create(
    free_store, clock, status, starts, ends, held
):
    other = reservation(
        "res-other", status, reserved=(FREE[0],), released=(),
        starts_at=NOW + timedelta(days=starts),
        ends_at=None if ends is None else NOW + timedelta(days=ends),
    )  # fmt: skip
    free_store.nodes["node-a"].reservations["res-other"] = other
    if held:
        _refusal(free_store, clock, UnitsUnavailable)
    else:
        assert create(free_store, clock).status == 201


@pytest.mark.parametrize(("new", "held"), [((0, 10), False), ((0, 11), True), ((20, 30), False),
                                           ((19, 30), True)])  # fmt: skip
def test_terms_that_only_touch_do_not_overlap(free_store, clock, new, held):
    """res-other holds FREE[0] from day 10 to day 20; the new term is [start, end)."""
    free_store.nodes["node-a"].reservations["res-other"] = reservation(
        "res-other", ReservationStatus.PENDING, reserved=(FREE[0],), released=(),
        starts_at=NOW + timedelta(days=10), ends_at=NOW + timedelta(days=20),
    )  # fmt: skip
    term = {"startsAt": format_time(NOW + timedelta(days=new[0], seconds=60 if new[0] == 0 else 0)),
            "endsAt": format_time(NOW + timedelta(days=new[1]))}  # fmt: skip
    if held:
        _refusal(free_store, clock, UnitsUnavailable, **term)
    else:
        assert create(free_store, clock, **term).status == 201


def test_a_unit_claimed_by_another_orgs_workload_is_409_when_the_term_includes_now(
    free_store, clock
):
    partition = free_store.nodes["node-a"]
    partition.workloads["vm-x"] = workload("vm-x", (FREE[1],))  # org-spot
    partition.units[FREE[1]] = unit(FREE[1], claimed_by="vm:vm-x")
    details = _refusal(free_store, clock, UnitsUnavailable)
    assert details == {
        "unitIds[1]": f"{FREE[1]}: claimed by vm:vm-x of an org outside allowedOrgIds"
    }
    # A term that starts later ignores today's claims; the audience's own workload may stay.
    later, end = (format_time(NOW + timedelta(hours=h)) for h in (1, 2))
    assert create(free_store, clock, startsAt=later, endsAt=end).status == 201
    audience = ["org-lab", "org-spot"]
    assert create(free_store, clock, allowedOrgIds=audience, endsAt=later).status == 201


def test_a_claim_is_judged_by_the_org_of_the_workload_holding_it_or_refused_without_one(
    free_store, clock
):
    partition = free_store.nodes["node-a"]
    # The audience has a workload of its own on the node (read first), on another unit.
    partition.workloads = {"vm-lab": replace(workload("vm-lab", ()), org_id="org-lab"),
                           **partition.workloads}  # fmt: skip
    partition.units[FREE[0]] = unit(FREE[0], claimed_by="vm:vm-spot")
    partition.units[FREE[1]] = unit(FREE[1], claimed_by="vm:vm-gone")  # a claim left behind
    assert _refusal(free_store, clock, UnitsUnavailable) == {
        "unitIds[0]": f"{FREE[0]}: claimed by vm:vm-spot of an org outside allowedOrgIds",
        "unitIds[1]": f"{FREE[1]}: claimed by vm:vm-gone of an org outside allowedOrgIds",
    }


@pytest.mark.parametrize(
    ("ends", "said"),
    [(None, ""), (NOW + timedelta(days=20), f" until {format_time(NOW + timedelta(days=20))}")],
)
def test_a_held_unit_names_the_reservation_its_status_and_its_end_if_any(
    free_store, clock, ends, said
):
    free_store.nodes["node-a"].reservations["res-other"] = reservation(
        "res-other", reserved=(FREE[0],), released=(), ends_at=ends
    )
    assert _refusal(free_store, clock, UnitsUnavailable) == {
        "unitIds[0]": f"{FREE[0]}: held by reservation res-other (active){said}"
    }


def test_a_unit_not_on_the_node_or_not_reservable_is_422_with_the_reason(free_store, clock):
    details = _refusal(
        free_store, clock, UnitsNotReservable, unitIds=[FREE[0], "0000:ff:00.0", MIG]
    )
    assert details == {
        "unitIds[1]": "0000:ff:00.0: unit is not on this node",
        "unitIds[2]": f"{MIG}: unit is not sellable: held for the host; "
        "allocation class mig is not reservable",
    }


def test_unavailable_comes_before_not_reservable(free_store, clock):
    _refusal(free_store, clock, UnitsUnavailable, unitIds=[UNITS[0], MIG])


# --- races --------------------------------------------------------------------------------


def test_a_create_that_lost_the_race_to_an_overlapping_one_rereads_and_is_409(free_store, clock):
    def rival_creates() -> None:
        create(free_store, clock, caller=OPERATOR)

    free_store.between_read_and_write.append(rival_creates)
    with pytest.raises(UnitsUnavailable) as refused:
        create(free_store, clock)
    assert "held by reservation res-new0" in refused.value.details[0].problem
    assert list(free_store.nodes["node-a"].reservations) == ["res-1", "res-new0"]


def test_a_create_whose_units_changed_meanwhile_decides_again(free_store, clock):
    def claimed_meanwhile() -> None:
        partition = free_store.nodes["node-a"]
        partition.workloads["vm-late"] = workload("vm-late", (FREE[0],), tier=Tier.ON_DEMAND)
        partition.units[FREE[0]] = unit(FREE[0], claimed_by="vm:vm-late", version=2)

    free_store.between_read_and_write.append(claimed_meanwhile)
    with pytest.raises(UnitsUnavailable):
        create(free_store, clock)
    assert free_store.reads == 2


def test_a_create_that_keeps_losing_is_409_conflict(free_store, clock, monkeypatch):
    def always_lose(write, answer):
        free_store.writes += 1
        raise WriteConflict("ConditionalCheckFailed")

    monkeypatch.setattr(free_store, "commit", always_lose)
    with pytest.raises(Conflict):
        create(free_store, clock)
    assert free_store.writes == MAX_ATTEMPTS


# --- Idempotency-Key ----------------------------------------------------------------------


def test_a_keyed_create_is_replayed_byte_for_byte_with_its_location(free_store, clock):
    first = create(free_store, clock, key="k1")
    clock.now = NOW + timedelta(minutes=1)
    again = create(free_store, clock, key="k1")
    assert (again.status, again.body) == (first.status, first.body)
    assert again.headers == (*first.headers, REPLAYED)  # Location, and the replay's mark
    assert list(free_store.nodes["node-a"].reservations) == ["res-1", "res-new0"]
    with pytest.raises(IdempotencyKeyReused):
        create(free_store, clock, key="k1", reason="another request")


def test_a_keyed_create_retried_after_its_start_went_stale_gets_the_first_answer(free_store, clock):
    """Exactly once: a client that lost the 201 and retries an hour later with the same key
    gets the 201 again, not a 400 for a startsAt now an hour old; only then is the record
    read. Without the key, or with another body under it, the stale term is what it is."""
    starts = {"startsAt": NOW.strftime("%Y-%m-%dT%H:%M:%SZ")}
    first = create(free_store, clock, key="k-late", **starts)
    clock.now = NOW + timedelta(hours=1)
    again = create(free_store, clock, key="k-late", **starts)
    assert (again.status, again.body, again.headers) == (
        first.status,
        first.body,
        (*first.headers, REPLAYED),
    )
    assert list(free_store.nodes["node-a"].reservations) == ["res-1", "res-new0"]
    with pytest.raises(InvalidRequest, match="startsAt is more than 5 minutes in the past"):
        create(free_store, clock, **starts)
    with pytest.raises(IdempotencyKeyReused):
        create(free_store, clock, key="k-late", reason="another request", **starts)
    with pytest.raises(InvalidRequest):
        create(free_store, clock, key="k-never-used", **starts)
    assert free_store.writes == 1


def test_a_keyed_create_is_fingerprinted_by_its_wire_fields_a_null_as_absent():
    # The fingerprint is kept with the key's record for a day, across deploys: its
    # document is the body under its wire names, without the fields given null or absent.
    given = {"unitIds": FREE[:2], "allowedOrgIds": ["org-lab"], "contractRef": None,
             "endsAt": "2027-01-01T00:00:00Z"}  # fmt: skip
    body = parse_create_request(RawBody(json.dumps(given)))
    assert CREATE.body.document(body) == {
        "unitIds": FREE[:2], "allowedOrgIds": ["org-lab"], "managingOrgIds": [],
        "endsAt": "2027-01-01T00:00:00Z",
    }  # fmt: skip


def test_a_kept_409_is_replayed_even_after_the_units_came_free(free_store, clock):
    with pytest.raises(UnitsUnavailable):
        create(free_store, clock, key="k2", unitIds=[UNITS[0]])
    del free_store.nodes["node-a"].reservations["res-1"]
    replayed = create(free_store, clock, key="k2", unitIds=[UNITS[0]])
    assert (replayed.status, json.loads(replayed.body)["code"]) == (409, "units_unavailable")

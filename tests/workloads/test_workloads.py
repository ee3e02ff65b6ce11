"""Place and end over the fakes: who may, every refusal, the write's conditions, the races
with reclaim, idempotency, and a fuzzed body judged against the contract's table by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import Conflict, IdempotencyKeyReused, InvalidRequest, NotFound
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.kernel.writes import ItemVersion
from reservations.nodes.errors import UnitsUnavailable
from reservations.nodes.models.partition import (
    Node,
    ReservationStatus,
    Termination,
    TerminationState,
    Tier,
    WorkloadState,
)
from reservations.workloads.errors import UnitsNotSellable, WorkloadExists
from tests.support.fakes import (
    FakeClock,
    FakeQueue,
    FakeTable,
    ports,
)
from tests.support.use_cases import BROKER, NOW, OPERATOR, QUEUE, reservation, unit, workload
from tests.support.writes import end_workload, place_workload, reclaim

pytestmark = pytest.mark.disable_socket

PLACE = frozenset({"workload.place"})
SCHEDULER = Caller("key-sched", "org-op", PLACE, platform_operator=True, key_hash="hash-sched")

RELEASED = "0000:04:00.0"  # res-1 (active, audience org-lab) has released it
KEPT = "0000:05:00.0"  # res-1 holds it, not released
REVIEW = "0000:06:00.0"  # res-review is needs-review
LATER = "0000:07:00.0"  # res-later (pending, audience org-lab) holds it in three days
FREE = "0000:08:00.0"  # nothing holds it
CLAIMED = "0000:09:00.0"  # vm-old runs on it
HOST = "0000:0a:00.0"  # not sellable: held for the host
TERMINATING = "0000:0b:00.0"  # vm-term, being terminated by res-1's reclaim
UNKNOWN = "0000:0f:00.0"  # not on the node


def node_store(clock: FakeClock) -> FakeTable:
    store = FakeTable(clock)
    old = workload("vm-old", (CLAIMED,))
    term = workload(
        "vm-term",
        (TERMINATING,),
        state=WorkloadState.TERMINATING,
        termination=Termination(
            id="t-1", reservation_id="res-1", requested_at=NOW - timedelta(minutes=1)
        ),
    )
    store.add(
        Node("node-a", "org-acme", queue_url=QUEUE),
        [
            *(unit(u) for u in (RELEASED, KEPT, REVIEW, LATER, FREE)),
            unit(CLAIMED, "vm:vm-old"),
            unit(TERMINATING, "vm:vm-term"),
            replace(unit(HOST), sellable=False, not_sellable_reason="held for the host"),
        ],
        [
            reservation(reserved=(RELEASED, KEPT, TERMINATING), released=(RELEASED,)),
            reservation("res-review", ReservationStatus.NEEDS_REVIEW, (REVIEW,), (REVIEW,)),
            reservation(
                "res-later",
                ReservationStatus.PENDING,
                (LATER,),
                (),
                starts_at=NOW + timedelta(days=3),
            ),
        ],
        [old, term],
    )
    return store


@pytest.fixture
def store(clock: FakeClock) -> FakeTable:
    return node_store(clock)


def body(units=(RELEASED,), workload_id="vm-new", tier="spot", org="org-spot", **more):
    return {
        "id": workload_id,
        "kind": "vm",
        "tier": tier,
        "orgId": org,
        "unitIds": list(units),
    } | more


def place(store, clock, document, caller=SCHEDULER, node="node-a", key=None):
    raw = RawBody(document if isinstance(document, str) else json.dumps(document))
    return place_workload(caller, node, raw, key, ports(store, clock))


def end(store, clock, workload_id, caller=SCHEDULER, node="node-a", key=None):
    return end_workload(caller, node, workload_id, key, ports(store, clock))


# --- who may: the one 404, before the body and before any read ---------------------------


@pytest.mark.parametrize(
    ("caller", "node"),
    [
        (replace(SCHEDULER, platform_operator=False, org_id="org-acme"), "node-a"),  # the owner
        (OPERATOR, "node-a"),  # an operator key without workload.place
        (SCHEDULER, "node a"),
    ],
    ids=["not-operator", "no-permission", "malformed-node"],
)
def test_only_operator_keys_with_workload_place_may_call_and_others_hear_404_first(
    store, clock, caller, node
):
    for call in (
        lambda: place(store, clock, "{not json", caller=caller, node=node),
        lambda: end(store, clock, "vm-old", caller=caller, node=node),
    ):
        with pytest.raises(NotFound):
            call()
    assert (store.reads, store.writes) == (0, 0)


def test_an_unknown_node_and_an_unknown_workload_are_the_same_404(store, clock):
    with pytest.raises(NotFound):
        place(store, clock, body(), node="node-x")
    for node, workload_id in (("node-x", "vm-old"), ("node-a", "vm-nope"), ("node-a", "vm/1")):
        with pytest.raises(NotFound):
            end(store, clock, workload_id, node=node)
    assert store.writes == 0


@pytest.mark.parametrize(
    ("document", "field"),
    [
        (body(kind="lxc"), "kind"),
        (body(tier="gold"), "tier"),
        (body(workload_id="-vm"), "id"),
        (body(org="org spot"), "orgId"),
        (body(units=()), "unitIds"),
        (body(units=[f"0000:{i:02x}:00.0" for i in range(33)]), "unitIds"),
        (body(units=(RELEASED, RELEASED.upper())), "unitIds[1]"),
        (body(units=("04:00.0",)), "unitIds[0]"),
        (body(dryRun=True), "dryRun"),
        ({k: v for k, v in body().items() if k != "orgId"}, "orgId"),
    ],
)
def test_a_bad_body_is_400_naming_the_field_before_the_node_is_read(store, clock, document, field):
    with pytest.raises(InvalidRequest) as raised:
        place(store, clock, document)
    assert field in [d.field for d in raised.value.details]
    assert store.reads == 0


# --- place ---------------------------------------------------------------------------------


def test_a_spot_vm_on_a_released_unit_is_placed_and_claims_it(store, clock):
    outcome = place(store, clock, body(units=(RELEASED.upper(),)))
    assert outcome.status == 201
    assert json.loads(outcome.body) == {
        "id": "vm-new",
        "nodeId": "node-a",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spot",
        "unitIds": [RELEASED],
        "state": "running",
        "createdAt": "2026-11-29T12:00:00Z",
        "promisedNoticeSeconds": 0,
        "promisedMinRunSeconds": 0,
    }
    partition = store.nodes["node-a"]
    assert partition.units[RELEASED].claimed_by == "vm:vm-new"
    assert partition.units[RELEASED].version == 2
    placed = partition.workloads["vm-new"]
    assert (placed.state, placed.tier, placed.org_id, placed.created_at) == (
        WorkloadState.RUNNING,
        Tier.SPOT,
        "org-spot",
        NOW,
    )
    assert (store.reads, store.writes) == (1, 1)


def test_the_write_checks_the_node_every_unit_and_the_reservations_governing_them(store, clock):
    place(store, clock, body(units=(RELEASED, LATER, FREE), tier="on-demand", org="org-lab"))
    [write] = store.placements
    assert write.node == ItemVersion("node-a", 1)
    assert write.units == tuple(ItemVersion(u, 1) for u in (RELEASED, LATER, FREE))
    # res-later holds LATER only from its start: before it, only a cancel changes it.
    assert write.reservations == (ItemVersion("res-1", 1),)
    assert (write.caller_org_id, write.caller_key_id) == ("org-op", "key-sched")


@pytest.mark.parametrize(
    ("units", "tier", "org"),
    [
        ((RELEASED,), "on-demand", "org-lab"),  # the audience, any tier
        ((RELEASED, KEPT), "reserved", "org-lab"),  # reserved tier, the audience's reservation
        ((LATER,), "spot", "org-spot"),  # pending later: anyone at spot
        ((LATER,), "on-demand", "org-lab"),  # pending later: its audience at any tier
        ((FREE,), "on-demand", "org-spot"),  # nothing: anyone
    ],
)
def test_each_open_row_of_the_table_places(store, clock, units, tier, org):
    assert place(store, clock, body(units=units, tier=tier, org=org)).status == 201


# --- "I also try to place where I should not be able to" ---------------------------------


@pytest.mark.parametrize(
    ("units", "tier", "org", "reason"),
    [
        ((KEPT,), "spot", "org-spot", "has not released the unit"),
        ((REVIEW,), "spot", "org-spot", "is under review"),
        ((REVIEW,), "on-demand", "org-lab", "is under review"),
        ((RELEASED,), "reserved", "org-spot", "tier reserved needs this org"),
        ((RELEASED,), "on-demand", "org-spot", "others may place only at tier spot"),
        ((LATER,), "on-demand", "org-spot", "holds the unit from"),
        ((LATER,), "reserved", "org-lab", "needs an active reservation"),
        ((FREE,), "reserved", "org-spot", "needs an active reservation"),
        ((CLAIMED,), "spot", "org-spot", "claimed by vm:vm-old"),
        ((TERMINATING,), "on-demand", "org-lab", "claimed by vm:vm-term"),
    ],
)
def test_each_closed_row_is_409_units_unavailable_naming_the_unit(
    store, clock, units, tier, org, reason
):
    with pytest.raises(UnitsUnavailable) as raised:
        place(store, clock, body(units=units, tier=tier, org=org))
    [detail] = raised.value.details
    assert detail.field == "unitIds[0]"
    assert detail.problem.startswith(units[0])
    assert reason in detail.problem
    assert store.writes == 0
    assert "vm-new" not in store.nodes["node-a"].workloads


def test_every_refused_unit_is_named_with_its_own_reason(store, clock):
    with pytest.raises(UnitsUnavailable) as raised:
        place(store, clock, body(units=(FREE, KEPT, REVIEW)))
    assert [d.field for d in raised.value.details] == ["unitIds[1]", "unitIds[2]"]
    assert raised.value.message == f"units not available to org-spot at tier spot: {KEPT}, {REVIEW}"


@pytest.mark.parametrize("unit_id", [HOST, UNKNOWN])
def test_a_unit_not_sellable_or_not_on_the_node_is_422(store, clock, unit_id):
    with pytest.raises(UnitsNotSellable) as raised:
        place(store, clock, body(units=(FREE, unit_id), tier="on-demand"))
    [detail] = raised.value.details
    assert detail.field == "unitIds[1]"
    assert unit_id in detail.problem
    assert store.writes == 0


def test_409_comes_before_422(store, clock):
    with pytest.raises(UnitsUnavailable):
        place(store, clock, body(units=(UNKNOWN, CLAIMED)))


def test_an_id_already_on_the_node_is_409_workload_exists_even_on_free_units(store, clock):
    with pytest.raises(WorkloadExists):
        place(store, clock, body(workload_id="vm-old", units=(FREE,)))
    assert store.writes == 0


# --- races: placement and reclaim deciding from the same snapshot -------------------------


def test_a_reclaim_between_read_and_write_makes_the_placement_decide_again_and_refuse(store, clock):
    queue = FakeQueue()

    def broker_reclaims() -> None:
        raw = RawBody(json.dumps({"unitIds": [RELEASED]}))
        reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue))

    store.between_read_and_write.append(broker_reclaims)
    with pytest.raises(UnitsUnavailable) as raised:
        place(store, clock, body())
    assert "has not released" in raised.value.details[0].problem
    assert "vm-new" not in store.nodes["node-a"].workloads
    assert store.nodes["node-a"].units[RELEASED].claimed_by is None


def test_a_placement_between_a_reclaims_read_and_write_is_terminated_by_its_retry(store, clock):
    queue = FakeQueue()
    store.between_read_and_write.append(lambda: place(store, clock, body()))
    raw = RawBody(json.dumps({"unitIds": [RELEASED]}))
    outcome = reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue))
    assert json.loads(outcome.body)["terminated"] == ["vm-new"]
    assert store.nodes["node-a"].workloads["vm-new"].state is WorkloadState.TERMINATING
    assert [m.workload_id for m in queue.sent(QUEUE)] == ["vm-new"]


def test_a_placement_that_keeps_losing_is_409_conflict_after_the_bounded_retries(
    store, clock, monkeypatch
):
    partition = store.nodes["node-a"]
    read = store.load_node

    def read_then_someone_writes_the_node(node_id: str):
        snapshot = read(node_id)
        partition.node = replace(partition.node, version=partition.node.version + 1)
        return snapshot

    monkeypatch.setattr(store, "load_node", read_then_someone_writes_the_node)
    with pytest.raises(Conflict):
        place(store, clock, body())
    assert store.writes == MAX_ATTEMPTS
    assert "vm-new" not in partition.workloads


def test_a_workload_of_the_same_id_placed_meanwhile_makes_it_409_workload_exists(store, clock):
    store.between_read_and_write.append(
        lambda: place(store, clock, body(units=(FREE,), tier="on-demand"))
    )
    with pytest.raises(WorkloadExists):
        place(store, clock, body())
    assert store.nodes["node-a"].workloads["vm-new"].unit_ids == (FREE,)


# --- idempotency ---------------------------------------------------------------------------


def test_a_repeated_keyed_placement_is_answered_again_byte_for_byte_and_placed_once(store, clock):
    first = place(store, clock, body(), key="place-1")
    clock.now += timedelta(minutes=5)
    again = place(store, clock, body(), key="place-1")
    assert (again.status, again.body) == (first.status, first.body)
    assert len(store.placements) == 1


def test_a_kept_refusal_is_replayed_and_another_body_under_the_key_is_422(store, clock):
    with pytest.raises(UnitsUnavailable) as first:
        place(store, clock, body(units=(KEPT,)), key="refused")
    store.nodes["node-a"].reservations["res-1"] = replace(
        store.nodes["node-a"].reservations["res-1"], released_unit_ids=(RELEASED, KEPT)
    )
    again = place(store, clock, body(units=(KEPT,)), key="refused")
    assert again.status == 409
    assert json.loads(again.body)["code"] == "units_unavailable"
    assert json.loads(again.body)["error"] == first.value.message
    with pytest.raises(IdempotencyKeyReused):
        place(store, clock, body(units=(FREE,)), key="refused")
    assert store.placements == []


# --- end -----------------------------------------------------------------------------------


def test_ending_a_workload_frees_its_units_and_moves_it_to_history(store, clock):
    outcome = end(store, clock, "vm-old")
    assert (outcome.status, outcome.body) == (204, "")
    partition = store.nodes["node-a"]
    assert "vm-old" not in partition.workloads
    assert partition.units[CLAIMED].claimed_by is None
    [ended] = store.ended
    assert ended.freed_units == (ItemVersion(CLAIMED, 1),)
    assert (ended.caller_org_id, ended.workload.id) == ("org-op", "vm-old")
    # The history record's id, the key that asked and when.
    assert (ended.caller_key_id, ended.at) == ("key-sched", NOW)
    assert isinstance(ended.write_id, str)
    assert ended.write_id


def test_ending_a_terminating_workload_closes_its_termination(store, clock):
    outbox = store
    assert [t.workload.id for t in outbox.listed(TerminationState.OPEN)] == ["vm-term"]
    assert end(store, clock, "vm-term").status == 204
    assert list(outbox.listed(TerminationState.OPEN)) == []
    assert store.nodes["node-a"].units[TERMINATING].claimed_by is None


def test_ending_frees_only_the_units_the_workload_still_holds(store, clock):
    partition = store.nodes["node-a"]
    partition.workloads["vm-old"] = replace(partition.workloads["vm-old"], unit_ids=(CLAIMED, FREE))
    partition.units[FREE] = replace(partition.units[FREE], claimed_by="pod:pod-next")
    end(store, clock, "vm-old")
    assert partition.units[FREE].claimed_by == "pod:pod-next"
    assert store.ended[0].freed_units == (ItemVersion(CLAIMED, 1),)


def test_a_repeated_end_is_404_without_a_key_and_the_first_204_with_one(store, clock):
    assert end(store, clock, "vm-old", key="end-1").status == 204
    again = end(store, clock, "vm-old", key="end-1")
    assert (again.status, again.body) == (204, "")
    with pytest.raises(NotFound):
        end(store, clock, "vm-old")
    with pytest.raises(NotFound):
        end(store, clock, "vm-old", key="end-2")  # a key that ended nothing replays nothing
    assert len(store.ended) == 1


def test_an_end_racing_a_report_decides_again(store, clock):
    partition = store.nodes["node-a"]

    def agent_reports_meanwhile() -> None:
        term = partition.workloads["vm-term"]
        partition.workloads["vm-term"] = replace(term, version=term.version + 1)

    store.between_read_and_write.append(agent_reports_meanwhile)
    assert end(store, clock, "vm-term").status == 204
    assert store.reads == 2


# --- fuzz: any body, judged by the contract's table written out by hand --------------------

# unit -> (org, tier) pairs it is open to; "sellable" False means a 422 once available.
OPEN = {
    RELEASED: {("org-lab", t) for t in Tier} | {("org-spot", Tier.SPOT)},
    KEPT: {("org-lab", t) for t in Tier},
    REVIEW: set(),
    LATER: {("org-lab", Tier.SPOT), ("org-lab", Tier.ON_DEMAND), ("org-spot", Tier.SPOT)},
    FREE: {(o, t) for o in ("org-lab", "org-spot") for t in (Tier.SPOT, Tier.ON_DEMAND)},
    CLAIMED: set(),
    TERMINATING: set(),
    HOST: {(o, t) for o in ("org-lab", "org-spot") for t in (Tier.SPOT, Tier.ON_DEMAND)},
}
NOT_SELLABLE = {HOST, UNKNOWN}


def expected_status(units: list[str], org: str, tier: Tier) -> int:
    if any(u in OPEN and (org, tier) not in OPEN[u] for u in units):
        return 409
    return 422 if NOT_SELLABLE.intersection(units) else 201


@given(
    units=st.lists(st.sampled_from([*OPEN, UNKNOWN]), min_size=1, max_size=4, unique=True),
    org=st.sampled_from(["org-lab", "org-spot"]),
    tier=st.sampled_from(list(Tier)),
    kind=st.sampled_from(["vm", "pod"]),
)
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_placements_succeed_exactly_where_the_table_opens_every_unit(units, org, tier, kind):
    clock = FakeClock(NOW)
    store = node_store(clock)
    document = body(units=units, tier=tier.value, org=org, kind=kind)
    try:
        status = place(store, clock, document).status
    except (UnitsUnavailable, UnitsNotSellable) as refusal:
        status = refusal.status
        assert store.writes == 0
    assert status == expected_status(units, org, tier)
    if status == 201:
        claims = {store.nodes["node-a"].units[u].claimed_by for u in units}
        assert claims == {f"{kind}:vm-new"}

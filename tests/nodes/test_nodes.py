"""Node registration and re-affirm over the fakes: every rule, in milliseconds."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import Conflict, InvalidRequest, NotFound
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.lifecycle.errors import ReservationNotInReview, UnitsNotReservable
from reservations.nodes.errors import StaleTopology, UnitsUnavailable
from reservations.nodes.models.partition import Node, ReservationStatus, Termination, WorkloadState
from reservations.nodes.rules.status import effective_status
from tests.support.fakes import FakeClock, FakeTable, ports
from tests.support.use_cases import NOW, OPERATOR, OWNER, UNITS, reservation, unit, workload
from tests.support.writes import put_node, reaffirm

pytestmark = pytest.mark.disable_socket

NODE_OP = replace(OPERATOR, permissions=frozenset({"node.write"}))
OWNER_NODES = replace(OWNER, permissions=frozenset({"node.write"}))


def spec(unit_id: str, **overrides: object) -> dict[str, object]:
    return {
        "id": unit_id,
        "allocClass": "vfio-group",
        "gpuModelId": "h100",
        "sellableGpus": 1,
        "sellable": True,
        **overrides,
    }


def put(store, clock, gen, units, *, caller=NODE_OP, node="node-a", owner="org-acme"):
    raw = RawBody(json.dumps({"ownerOrgId": owner, "topologyGen": gen, "units": units}))
    outcome = put_node(caller, node, raw, ports(store, clock))
    return outcome.status, json.loads(outcome.body)


@pytest.fixture
def small(clock: FakeClock) -> FakeTable:
    """node-a at generation 3: units 04-06 (a spot VM on 06), res-1 active on 04, res-2
    pending on 05, res-old cancelled on 04, res-rev under review on 05."""
    store = FakeTable(clock)
    store.add(
        Node("node-a", "org-acme", topology_gen=3, queue_url="q", created_at=NOW - timedelta(1)),
        [unit(UNITS[0]), unit(UNITS[1]), unit(UNITS[2], "vm:vm-1")],
        [
            reservation("res-1", reserved=(UNITS[0],), released=(UNITS[0],)),
            reservation("res-2", ReservationStatus.PENDING, reserved=(UNITS[1],), released=()),
            reservation("res-old", ReservationStatus.CANCELLED, reserved=(UNITS[0],), released=()),
            reservation("res-rev", ReservationStatus.NEEDS_REVIEW, reserved=(UNITS[1],)),
        ],
        [workload("vm-1", (UNITS[2],))],
    )
    return store


def current(store: FakeTable) -> list[object]:
    partition = store.nodes["node-a"]
    return [partition.node, dict(partition.units), dict(partition.reservations)]


# --- who may -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("caller", "node"),
    [
        (OWNER_NODES, "node-a"),  # node.write, but not the operator's key
        (OPERATOR, "node-a"),  # the operator, without node.write
        (NODE_OP, "node a"),
        (NODE_OP, "-node"),
    ],
)
def test_only_an_operator_with_node_write_may_and_before_any_read(small, clock, caller, node):
    with pytest.raises(NotFound):
        put(small, clock, 9, "not a list", caller=caller, node=node)
    assert (small.reads, small.writes) == (0, 0)


def test_the_body_is_checked_before_the_node_is_read(small, clock):
    with pytest.raises(InvalidRequest) as refused:
        put(small, clock, 4, [spec(UNITS[0]), spec(UNITS[0].upper())])
    assert [d.field for d in refused.value.details] == ["units[1].id"]
    assert small.reads == 0


# --- registering and updating ----------------------------------------------------------------


def test_a_new_node_is_201_with_the_queue_made_before_the_write(small, clock):
    status, body = put(small, clock, 1, [spec("0000:0A:00.0")], node="node-new")
    assert status == 201
    assert body == {
        "id": "node-new",
        "ownerOrgId": "org-acme",
        "topologyGen": 1,
        "unitIds": ["0000:0a:00.0"],
        "createdAt": "2026-11-29T12:00:00Z",
        "updatedAt": "2026-11-29T12:00:00Z",
    }
    [write] = small.node_writes
    assert write.node.queue_url == "https://sqs.test/node-new.fifo"
    assert (write.node.created_at, write.node.updated_at) == (NOW, NOW)
    assert write.node_read is None
    assert (write.node.version, write.placements_read) == (1, 0)


def test_an_update_writes_the_node_at_the_next_version_conditioned_on_what_it_read(small, clock):
    """The write the DAL turns into one transaction and its audit record, field by field."""
    partition = small.nodes["node-a"]
    partition.node = replace(partition.node, version=7, placements=2)
    partition.units[UNITS[1]] = unit(UNITS[1], version=5)
    new = "0000:0a:00.0"
    units = [spec(UNITS[0]), spec(UNITS[1], gpuModelId="a100"), spec(UNITS[2]), spec(new)]
    assert put(small, clock, 4, units)[0] == 200
    [write] = small.node_writes
    assert (write.node.version, write.node_read, write.placements_read) == (8, 7, 2)
    assert (write.node.queue_url, write.node.updated_at) == ("q", NOW)  # its queue as stored
    assert [(p.unit.id, p.unit.version, p.read) for p in write.units] == [
        (UNITS[1], 6, 5),  # changed: at the version read, and one more
        (new, 1, None),  # new: absent when read
    ]
    assert (write.caller_org_id, write.caller_key_id, write.at) == ("org-op", NODE_OP.key_id, NOW)
    assert isinstance(write.write_id, str)
    assert write.write_id
    assert write.leftovers == ()


def test_unit_items_an_earlier_update_left_are_deleted_unless_reported_again(small, clock):
    partition = small.nodes["node-a"]
    listed = {u: 0 for u in UNITS[:3]}
    partition.node = replace(partition.node, unit_changed_at=listed)
    left, back = "0000:0a:00.0", "0000:0b:00.0"
    partition.units[left] = unit(left, version=3)
    partition.units[back] = unit(back, version=4)
    assert put(small, clock, 4, [*(spec(u) for u in UNITS[:3]), spec(back)])[0] == 200
    [write] = small.node_writes
    assert [(v.id, v.version) for v in write.leftovers] == [(left, 3)]
    assert [(p.unit.id, p.unit.version, p.read) for p in write.units] == [(back, 5, 4)]
    assert left not in partition.units


@pytest.mark.parametrize(
    ("gen", "units", "why"),
    [
        (2, [spec(u) for u in UNITS[:3]], "lower than the stored 3"),
        (3, [spec(u) for u in UNITS[:2]], "the units differ"),
        (3, [spec(UNITS[0]), spec(UNITS[1], sellableGpus=2), spec(UNITS[2])], "the units differ"),
        (3, [*(spec(u) for u in UNITS[:3]), spec(UNITS[3])], "the units differ"),
    ],
)
def test_a_stale_generation_is_409_and_writes_nothing(small, clock, gen, units, why):
    before = current(small)
    with pytest.raises(StaleTopology, match=why):
        put(small, clock, gen, units)
    assert small.writes == 0
    assert current(small) == before


def test_the_same_generation_and_units_with_a_new_owner_is_an_update(small, clock):
    status, body = put(small, clock, 3, [spec(u) for u in UNITS[:3]], owner="org-new")
    assert (status, body["ownerOrgId"], body["createdAt"]) == (
        200,
        "org-new",
        "2026-11-28T12:00:00Z",
    )
    assert small.nodes["node-a"].node.owner_org_id == "org-new"


def test_a_repeat_of_what_is_stored_writes_nothing(small, clock):
    status, body = put(small, clock, 3, [spec(u) for u in UNITS[:3]])
    assert (status, body["topologyGen"], small.writes) == (200, 3, 0)


def test_removing_a_unit_a_workload_claims_is_409_naming_it(small, clock):
    with pytest.raises(UnitsUnavailable) as refused:
        put(small, clock, 4, [spec(UNITS[0]), spec(UNITS[1])])
    assert [(d.field, d.problem) for d in refused.value.details] == [
        ("units", f"{UNITS[2]}: unit would be removed but is claimed by vm:vm-1")
    ]
    assert small.writes == 0


def test_removing_units_workloads_claim_names_each_in_the_message(small, clock):
    partition = small.nodes["node-a"]
    partition.units[UNITS[1]] = unit(UNITS[1], "vm:vm-2")
    partition.workloads["vm-2"] = workload("vm-2", (UNITS[1],))
    with pytest.raises(UnitsUnavailable) as refused:
        put(small, clock, 4, [spec(UNITS[0])])
    assert refused.value.message == f"node node-a: units still claimed: {UNITS[1]}, {UNITS[2]}"


def test_a_terminating_workload_still_claims_its_units(small, clock):
    small.nodes["node-a"].units[UNITS[2]] = unit(UNITS[2])  # claim not on the unit item
    small.nodes["node-a"].workloads["vm-1"] = workload(
        "vm-1", (UNITS[2],), state=WorkloadState.TERMINATING, termination=Termination(id="t-1")
    )
    with pytest.raises(UnitsUnavailable):
        put(small, clock, 4, [spec(UNITS[0]), spec(UNITS[1])])


def effective(store: FakeTable, reservation_id: str) -> ReservationStatus:
    partition = store.nodes["node-a"]
    return effective_status(partition.reservations[reservation_id], partition.node, NOW)


def test_gone_and_changed_units_put_pending_and_active_reservations_under_review_unwritten(
    small, clock
):
    stored = dict(small.nodes["node-a"].reservations)
    status, body = put(small, clock, 4, [spec(UNITS[1], gpuModelId="a100"), spec(UNITS[2])])
    assert (status, body["unitIds"]) == (200, [UNITS[1], UNITS[2]])
    statuses = {r: effective(small, r) for r in stored}
    assert statuses == {
        "res-1": ReservationStatus.NEEDS_REVIEW,  # its unit is gone
        "res-2": ReservationStatus.NEEDS_REVIEW,  # its unit changed model
        "res-old": ReservationStatus.CANCELLED,  # cancelled: not reviewed
        "res-rev": ReservationStatus.NEEDS_REVIEW,  # already under review
    }
    assert small.nodes["node-a"].reservations == stored  # no reservation is written
    [write] = small.node_writes
    assert write.reviewed == 2  # res-1 and res-2: what the audit record counts
    assert [u.id for u in write.removed] == [UNITS[0]]
    assert write.changed_unit_ids == (UNITS[0], UNITS[1])
    # 05 changed at generation 4; 06 is as registered.
    assert small.nodes["node-a"].node.unit_changed_at == {UNITS[1]: 4, UNITS[2]: 0}
    assert small.nodes["node-a"].units[UNITS[1]].gpu_model_id == "a100"


def test_a_reservation_whose_term_is_over_is_not_brought_back_for_review(small, clock):
    """Stored active, ended yesterday (expired, as read): a change of its unit breaks no
    promise; it stays expired, and withholds nothing."""
    ended = reservation("res-ended", reserved=(UNITS[1],), released=(),
                        starts_at=NOW - timedelta(days=30), ends_at=NOW - timedelta(days=1))  # fmt: skip
    small.nodes["node-a"].reservations["res-ended"] = ended
    status, _ = put(small, clock, 4, [spec(UNITS[0]), spec(UNITS[1], gpuModelId="a100"),
                                      spec(UNITS[2])])  # fmt: skip
    assert status == 200
    [write] = small.node_writes
    assert write.reviewed == 1  # res-2
    assert effective(small, "res-ended") is ReservationStatus.EXPIRED
    assert small.nodes["node-a"].reservations["res-ended"] == ended


@pytest.mark.parametrize(
    ("change", "reviewed"),
    [
        ({"allocClass": "mig"}, True),
        ({"gpuModelId": "a100"}, True),
        ({"sellableGpus": 2}, True),
        ({"sellable": False}, True),
        ({"gpuModelName": "H100, renamed"}, False),
        ({"notSellableReason": "worded anew"}, False),
    ],
)
def test_only_a_change_of_class_model_gpus_or_sellable_needs_review(small, clock, change, reviewed):
    put(small, clock, 4, [spec(UNITS[0], **change), spec(UNITS[1]), spec(UNITS[2])])
    assert (effective(small, "res-1") is ReservationStatus.NEEDS_REVIEW) is reviewed
    assert small.nodes["node-a"].node.unit_changed_at[UNITS[0]] == (4 if reviewed else 0)
    assert small.nodes["node-a"].units[UNITS[0]].version == 2  # the unit is written anyway


def test_a_review_outlives_later_updates_until_a_reaffirm_clears_it(small, clock):
    """The unit changed at 4; at 5 another unit is added: res-2 (sold at 3) is still under
    review. Re-affirmed, it takes generation 5 and is active; at 6 its unit is removed."""
    put(small, clock, 4, [spec(UNITS[0]), spec(UNITS[1], gpuModelId="a100"), spec(UNITS[2])])
    put(small, clock, 5, [spec(UNITS[0]), spec(UNITS[1], gpuModelId="a100"), spec(UNITS[2]),
                          spec(UNITS[3])])  # fmt: skip
    assert effective(small, "res-2") is ReservationStatus.NEEDS_REVIEW
    assert effective(small, "res-1") is ReservationStatus.ACTIVE  # 04 never changed
    status, body = affirm(small, clock, "res-2")
    assert (status, body["status"], body["topologyGen"]) == (200, "active", 5)
    assert effective(small, "res-2") is ReservationStatus.ACTIVE
    put(small, clock, 6, [spec(UNITS[0]), spec(UNITS[2]), spec(UNITS[3])])
    assert effective(small, "res-2") is ReservationStatus.NEEDS_REVIEW


def test_a_changed_claimed_unit_keeps_its_claim(small, clock):
    put(small, clock, 4, [spec(UNITS[0]), spec(UNITS[1]), spec(UNITS[2], sellable=False)])
    assert small.nodes["node-a"].units[UNITS[2]].claimed_by == "vm:vm-1"


def test_a_node_without_a_queue_gets_one(small, clock):
    small.nodes["node-a"].node = replace(small.nodes["node-a"].node, queue_url=None)
    assert put(small, clock, 3, [spec(u) for u in UNITS[:3]])[0] == 200
    assert small.nodes["node-a"].node.queue_url == "https://sqs.test/node-a.fifo"


def test_a_lost_race_reads_again_and_decides_anew(small, clock):
    def scheduler_claims_unit_04() -> None:
        partition = small.nodes["node-a"]
        partition.units[UNITS[0]] = replace(
            partition.units[UNITS[0]], claimed_by="vm:vm-late", version=2
        )

    small.between_read_and_write.append(scheduler_claims_unit_04)
    with pytest.raises(UnitsUnavailable, match=UNITS[0]):
        put(small, clock, 4, [spec(UNITS[1]), spec(UNITS[2])])
    assert small.reads == 2
    assert small.nodes["node-a"].units[UNITS[0]].claimed_by == "vm:vm-late"


def test_a_write_that_keeps_losing_is_409_conflict(small, clock):
    read = small.load_node

    def read_then_someone_writes(node_id: str):
        snapshot = read(node_id)
        node = small.nodes["node-a"].node
        small.nodes["node-a"].node = replace(node, version=node.version + 1)
        return snapshot

    small.load_node = read_then_someone_writes  # type: ignore[method-assign]
    with pytest.raises(Conflict):
        put(small, clock, 4, [spec(u) for u in UNITS[:3]])
    assert (small.reads, small.writes) == (MAX_ATTEMPTS, MAX_ATTEMPTS)


# --- re-affirm -----------------------------------------------------------------------------


def affirm(store, clock, res, body=None, key=None, caller=NODE_OP):
    raw = RawBody(None if body is None else json.dumps(body))
    outcome = reaffirm(caller, "node-a", res, raw, key, ports(store, clock))
    return outcome.status, json.loads(outcome.body)


def test_reaffirm_takes_the_node_generation_empties_releases_and_stores_status_by_clock(
    small, clock
):
    status, body = affirm(small, clock, "res-rev", {"reason": "checked"})
    assert status == 200
    assert (body["status"], body["topologyGen"], body["releasedUnitIds"]) == ("active", 3, [])
    stored = small.nodes["node-a"].reservations["res-rev"]
    assert (stored.status, stored.topology_gen, stored.released_unit_ids) == (
        ReservationStatus.ACTIVE,
        3,
        (),
    )
    assert stored.updated_at == NOW
    [write] = small.reaffirmed
    assert (write.reason, write.caller_org_id) == ("checked", "org-op")
    # The audit record's id, its caller key and time, and the node item it is conditioned on.
    assert (write.caller_key_id, write.at) == (NODE_OP.key_id, NOW)
    assert (write.node.id, write.node.version) == ("node-a", small.nodes["node-a"].node.version)
    assert isinstance(write.write_id, str)
    assert write.write_id


def test_reaffirm_before_the_start_stores_pending(small, clock):
    partition = small.nodes["node-a"]
    partition.reservations["res-rev"] = replace(
        partition.reservations["res-rev"], starts_at=NOW + timedelta(hours=1)
    )
    assert affirm(small, clock, "res-rev")[1]["status"] == "pending"
    assert partition.reservations["res-rev"].status is ReservationStatus.PENDING


@pytest.mark.parametrize("res", ["res-1", "res-2", "res-old"])
def test_reaffirm_of_a_reservation_not_in_review_is_409(small, clock, res):
    with pytest.raises(ReservationNotInReview):
        affirm(small, clock, res)
    assert small.reaffirmed == []


def test_reaffirm_names_every_unit_gone_or_not_reservable(small, clock):
    partition = small.nodes["node-a"]
    partition.units[UNITS[0]] = replace(partition.units[UNITS[0]], sellable=False)
    partition.reservations["res-rev"] = replace(
        partition.reservations["res-rev"], reserved_unit_ids=(UNITS[0], UNITS[1], UNITS[4])
    )
    with pytest.raises(UnitsNotReservable) as refused:
        affirm(small, clock, "res-rev")
    assert [(d.field, d.problem) for d in refused.value.details] == [
        ("reservedUnitIds[0]", f"{UNITS[0]}: unit is not sellable"),
        ("reservedUnitIds[2]", f"{UNITS[4]}: unit is not on this node"),
    ]


@pytest.mark.parametrize(
    ("caller", "res"),
    [(OWNER_NODES, "res-rev"), (OPERATOR, "res-rev"), (NODE_OP, "res-x"), (NODE_OP, "res/1")],
)
def test_reaffirm_answers_the_one_404(small, clock, caller, res):
    with pytest.raises(NotFound):
        affirm(small, clock, res, caller=caller)
    assert small.writes == 0


def test_a_keyed_reaffirm_replays_and_a_kept_refusal_too(small, clock):
    first = affirm(small, clock, "res-rev", {"reason": "x"}, key="k")
    assert affirm(small, clock, "res-rev", {"reason": "x"}, key="k") == first
    assert len(small.reaffirmed) == 1
    with pytest.raises(ReservationNotInReview):
        affirm(small, clock, "res-1", key="r")
    status, body = affirm(small, clock, "res-1", key="r")  # the kept answer, replayed
    assert (status, body["code"]) == (409, "reservation_not_in_review")


def test_reaffirm_racing_a_node_update_decides_on_the_new_topology(small, clock):
    def node_update_removes_unit_05() -> None:
        partition = small.nodes["node-a"]
        partition.node = replace(partition.node, topology_gen=4, version=2)
        del partition.units[UNITS[1]]

    small.between_read_and_write.append(node_update_removes_unit_05)
    with pytest.raises(UnitsNotReservable, match=UNITS[1]):
        affirm(small, clock, "res-rev")
    assert small.reads == 2

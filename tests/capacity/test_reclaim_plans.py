"""Reclaim by ``count`` and as a plan, over the fakes: the contract's choice of released
units, ``reclaimedUnitIds``, ``not_enough_released``, the key a real count needs, and the
signed plan a dry run hands out and its apply does exactly, or refuses as ``plan_stale``."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from reservations import endpoints
from reservations.capacity.errors import NotEnoughReleased, PlanStale
from reservations.capacity.models import MAX_PLAN_ID
from reservations.capacity.reclaim import RECLAIM
from reservations.capacity.rules.plan import plan_reclaim, units_by_count
from reservations.capacity.rules.plan_id import (
    PlanScope,
    bind,
    decode_plan,
    encode_plan,
)
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import (
    Conflict,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    PreconditionFailed,
)
from reservations.kernel.pipeline import run_write
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.kernel.writes import WriteConflict
from reservations.nodes.models.partition import (
    Node,
    Termination,
    Tier,
    WorkloadState,
)
from tests.support.fakes import FakeClock, FakeQueue, FakeTable, ports
from tests.support.use_cases import BROKER, NOW, OPERATOR, OWNER, reservation, unit, workload
from tests.support.writes import end_workload, place_workload, reclaim, release

pytestmark = pytest.mark.disable_socket

P = [f"0000:{n:02x}:00.0" for n in range(0x10, 0x1A)]
QUEUE = "https://sqs.test/node-p.fifo"
SCHEDULER = Caller(
    "key-sched", "org-op", frozenset({"workload.place"}), platform_operator=True, key_hash="hs"
)
KEY = b"test-only-cursor-signing-key-0123456789"


def lent_node(store: FakeTable) -> None:
    """node-p: res-1 reserves P0-P8 and has released P0-P7. A spot VM on P0 (vm-a); a spot
    VM on P1, P3 and P5 (vm-b); P2 and P6 free; a reserved VM on P4 (vm-r); a spot VM
    already terminating on P7 (vm-t). P8 is reserved, not released; P9 is nobody's."""
    workloads = [
        workload("vm-a", (P[0],)),
        workload("vm-b", (P[1], P[3], P[5])),
        workload("vm-r", (P[4],), tier=Tier.RESERVED),
        workload(
            "vm-t",
            (P[7],),
            state=WorkloadState.TERMINATING,
            termination=Termination(id="t-old", reservation_id="res-1", requested_at=NOW),
        ),
    ]
    claims = {u: f"vm:{w.id}" for w in workloads for u in w.unit_ids}
    res = reservation(reserved=tuple(P[:9]), released=tuple(P[:8]), node_id="node-p")
    store.add(
        Node("node-p", "org-acme", queue_url=QUEUE, topology_gen=3),
        [unit(u, claims.get(u)) for u in P],
        [res],
        workloads,
    )


@pytest.fixture
def lent(clock: FakeClock) -> FakeTable:
    store = FakeTable(clock)
    lent_node(store)
    return store


def post(store, clock, queue, body, key=None, caller=BROKER, node="node-p", res="res-1"):
    raw = RawBody(json.dumps(body))
    outcome = reclaim(caller, node, res, raw, key, ports(store, clock, queue))
    return outcome.status, json.loads(outcome.body)


def plan_of(store, clock, queue, body, caller=BROKER):
    status, answer = post(store, clock, queue, {**body, "dryRun": True}, caller=caller)
    assert status == 200
    return answer


def stored(store, node="node-p", res="res-1"):
    return store.nodes[node].reservations[res]


# --- the choice by count ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "chosen", "terminated"),
    [
        (1, [2], []),  # a free released unit first
        (2, [2, 6], []),
        (3, [2, 4, 6], []),  # then a unit whose workload is not spot
        (4, [2, 4, 6, 7], ["vm-t"]),  # ... or already terminating (no new termination)
        (5, [1, 2, 4, 6, 7], ["vm-b", "vm-t"]),  # then vm-b: it holds the most released
        (7, [1, 2, 3, 4, 5, 6, 7], ["vm-b", "vm-t"]),
        (8, [0, 1, 2, 3, 4, 5, 6, 7], ["vm-a", "vm-b", "vm-t"]),
    ],
)
def test_count_chooses_as_the_contract_orders_and_says_what_it_chose(
    lent, clock, queue, count, chosen, terminated
):
    answer = plan_of(lent, clock, queue, {"count": count})
    assert answer["reclaimedUnitIds"] == [P[i] for i in chosen]
    assert answer["wouldTerminate"] == terminated
    assert answer["wouldSkip"] == (["vm-r"] if 4 in chosen else [])
    assert lent.writes == 0


def test_a_tie_goes_to_the_workload_with_the_lowest_unit_id(clock):
    store = FakeTable(clock)
    spots = [workload("vm-x", (P[1], P[3])), workload("vm-y", (P[2], P[0]))]
    res = reservation(reserved=tuple(P[:4]), released=tuple(P[:4]), node_id="node-p")
    store.add(Node("node-p", "org-acme"), [unit(u) for u in P[:4]], [res], spots)
    snapshot = store.load_node("node-p")
    assert units_by_count(snapshot, res, 2) == (P[0], P[2])  # vm-y's: it holds P0
    assert units_by_count(snapshot, res, 3) == (P[0], P[1], P[2])


def test_a_spot_workload_cut_by_the_count_is_terminated_whole(lent, clock, queue):
    status, answer = post(lent, clock, queue, {"count": 5}, key="k-5")
    assert status == 200
    assert answer["reclaimedUnitIds"] == [P[1], P[2], P[4], P[6], P[7]]
    assert answer["terminated"] == ["vm-b", "vm-t"]  # vm-b also held P3 and P5
    assert answer["skipped"] == ["vm-r"]
    assert stored(lent).released_unit_ids == (P[0], P[3], P[5])
    assert [m.workload_id for m in queue.messages[QUEUE]] == ["vm-b"]


def test_fewer_released_than_the_count_is_409_naming_how_many_and_kept_by_a_key(lent, clock, queue):
    with pytest.raises(NotEnoughReleased, match="has 8 released units; 9 were asked for"):
        post(lent, clock, queue, {"count": 9}, key="k-9")
    assert stored(lent).released_unit_ids == tuple(P[:8])  # nothing done, the answer kept
    # Kept: the same key answers the same 409 even once the units are there.
    stored_res = stored(lent)
    lent.nodes["node-p"].reservations["res-1"] = replace(
        stored_res, released_unit_ids=tuple(P[:9]), version=stored_res.version + 1
    )
    status, answer = post(lent, clock, queue, {"count": 9}, key="k-9")
    assert (status, answer["code"]) == (409, "not_enough_released")
    with pytest.raises(NotEnoughReleased):  # a dry run says the same
        post(lent, clock, queue, {"count": 10, "dryRun": True})


def test_a_real_count_needs_an_idempotency_key_or_an_if_match_and_a_dry_run_neither(
    lent, clock, queue
):
    with pytest.raises(InvalidRequest) as refused:
        post(lent, clock, queue, {"count": 1})
    assert [d.field for d in refused.value.details] == ["Idempotency-Key", "If-Match"]
    with pytest.raises(InvalidRequest):  # "*" names no version: a repeat would take more
        post_matching(lent, clock, queue, {"count": 1}, "*")
    assert lent.writes == 0
    assert post(lent, clock, queue, {"count": 1, "dryRun": True})[0] == 200
    etag = post(lent, clock, queue, {"count": 1, "dryRun": True})[1]["etag"]
    status, first = post_matching(lent, clock, queue, {"count": 1}, f'"{etag}"')
    assert (status, first["reclaimedUnitIds"]) == (200, [P[2]])
    with pytest.raises(PreconditionFailed):  # its repeat no longer matches: nothing more
        post_matching(lent, clock, queue, {"count": 1}, f'"{etag}"')
    assert stored(lent).released_unit_ids == tuple(u for u in P[:8] if u != P[2])


def post_matching(store, clock, queue, body, if_match):
    raw = RawBody(json.dumps(body))
    route = endpoints.RECLAIM.at(nodeId="node-p", reservationId="res-1")
    outcome = run_write(RECLAIM, route, BROKER, raw, None, ports(store, clock, queue), if_match)
    return outcome.status, json.loads(outcome.body)


def test_a_keyed_count_is_done_once_and_its_repeat_replays(lent, clock, queue):
    first = post(lent, clock, queue, {"count": 2}, key="k-2")
    assert first[1]["reclaimedUnitIds"] == [P[2], P[6]]
    again = post(lent, clock, queue, {"count": 2}, key="k-2")
    assert again == first
    assert stored(lent).released_unit_ids == tuple(u for u in P[:8] if u not in (P[2], P[6]))
    other = post(lent, clock, queue, {"count": 2}, key="k-3")  # another key takes 2 more
    assert other[1]["reclaimedUnitIds"] == [P[4], P[7]]


def test_unit_ids_calls_answer_the_named_units_sorted(lent, clock, queue):
    status, answer = post(lent, clock, queue, {"unitIds": [P[6].upper(), P[2]]})
    assert status == 200
    assert answer["reclaimedUnitIds"] == [P[2], P[6]]
    dry = plan_of(lent, clock, queue, {"unitIds": [P[8], P[0]]})
    assert dry["reclaimedUnitIds"] == [P[0], P[8]]


# --- the plan: handed out, applied exactly ------------------------------------------------


def test_a_dry_run_hands_out_a_plan_for_five_minutes(lent, clock, queue):
    answer = plan_of(lent, clock, queue, {"count": 5})
    assert answer["planExpiresAt"] == "2026-11-29T12:05:00Z"
    assert isinstance(answer["planId"], str)
    assert len(answer["planId"]) < 1024
    assert lent.writes == 0
    assert "terminated" not in answer
    assert "planId" not in post(lent, clock, queue, {"count": 1}, key="k")[1]


def test_applying_a_plan_does_exactly_it(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 5})
    version = stored(lent).version
    clock.now += timedelta(minutes=4)
    status, answer = post(lent, clock, queue, {"planId": plan["planId"], "reason": "ours now"})
    assert status == 200
    assert answer["reclaimedUnitIds"] == plan["reclaimedUnitIds"]
    assert answer["terminated"] == plan["wouldTerminate"]
    assert answer["skipped"] == plan["wouldSkip"]
    assert "planId" not in answer
    assert stored(lent).released_unit_ids == (P[0], P[3], P[5])
    assert stored(lent).version == version + 1
    assert lent.nodes["node-p"].workloads["vm-b"].state is WorkloadState.TERMINATING
    assert lent.nodes["node-p"].workloads["vm-a"].state is WorkloadState.RUNNING
    assert [m.workload_id for m in queue.messages[QUEUE]] == ["vm-b"]
    assert lent.audit[-1].reason == "ours now"


def test_a_plan_that_changes_no_release_still_moves_the_version_and_applies_once(
    lent, clock, queue
):
    plan = plan_of(lent, clock, queue, {"unitIds": [P[8]]})  # reserved, never released
    version = stored(lent).version
    assert post(lent, clock, queue, {"planId": plan["planId"]})[0] == 200
    assert stored(lent).version == version + 1
    with pytest.raises(PlanStale, match="reservation res-1 changed"):
        post(lent, clock, queue, {"planId": plan["planId"]})


def test_a_second_apply_is_stale_without_a_key_and_replays_with_the_same_key(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 2})
    first = post(lent, clock, queue, {"planId": plan["planId"]}, key="apply-1")
    assert post(lent, clock, queue, {"planId": plan["planId"]}, key="apply-1") == first
    with pytest.raises(PlanStale) as stale:
        post(lent, clock, queue, {"planId": plan["planId"]})
    assert stale.value.details[0].field == "planId"
    assert stored(lent).released_unit_ids == tuple(u for u in P[:8] if u not in (P[2], P[6]))


def test_an_expired_plan_is_stale_saying_so_and_kept_by_a_key(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 2})
    clock.now += timedelta(minutes=5)
    with pytest.raises(PlanStale, match="expired"):
        post(lent, clock, queue, {"planId": plan["planId"]}, key="late")
    status, answer = post(lent, clock, queue, {"planId": plan["planId"]}, key="late")
    assert (status, answer["code"]) == (409, "plan_stale")
    assert stored(lent).released_unit_ids == tuple(P[:8])


@pytest.mark.parametrize(
    "tamper",
    [
        lambda plan: plan[:-2] + ("AA" if plan[-2:] != "AA" else "BB"),  # the signature
        lambda plan: "e30" + plan[3:],  # the payload
        lambda plan: plan.split(".")[0],  # no signature
        lambda plan: "not a plan",
        lambda plan: plan + "." + plan,
    ],
)
def test_a_tampered_plan_is_400_naming_plan_id(lent, clock, queue, tamper):
    plan = plan_of(lent, clock, queue, {"count": 2})
    with pytest.raises(InvalidRequest) as refused:
        post(lent, clock, queue, {"planId": tamper(plan["planId"])}, key="t")
    assert [d.field for d in refused.value.details] == ["planId"]
    assert lent.writes == 0
    assert not lent.answers


def test_a_plan_made_for_another_reservation_or_org_is_400(lent, clock, queue):
    res_2 = reservation(
        "res-2", reserved=(P[9],), released=(P[9],), node_id="node-p", managing_org_ids=()
    )
    lent.seed("node-p", res_2)
    plan = plan_of(lent, clock, queue, {"count": 2})
    with pytest.raises(InvalidRequest, match="planId"):
        post(lent, clock, queue, {"planId": plan["planId"]}, caller=OPERATOR, res="res-2")
    with pytest.raises(InvalidRequest, match="planId"):  # the owner, not the broker
        post(lent, clock, queue, {"planId": plan["planId"]}, caller=OWNER)
    assert lent.writes == 0


def test_a_plan_is_bound_to_its_node_reservation_and_org_by_its_signature(lent):
    res = stored(lent)
    snapshot = lent.load_node("node-p")
    signed = bind(plan_reclaim(snapshot, res, P[:3]), snapshot.node, 120, NOW)
    scope = PlanScope("node-p", "res-1", "org-broker")
    text = encode_plan(signed, scope, KEY)
    assert decode_plan(text, scope, KEY) == signed
    assert signed.notice_seconds == 120  # carried as the dry run was asked
    for other in (
        replace(scope, node_id="node-q"),
        replace(scope, reservation_id="res-2"),
        replace(scope, org_id="org-acme"),
    ):
        with pytest.raises(InvalidRequest):
            decode_plan(text, other, KEY)
    with pytest.raises(InvalidRequest):  # another key (a cursor's would be another purpose)
        decode_plan(text, scope, b"another-key-of-at-least-32-bytes!!")


def test_the_largest_plan_stays_under_4_kb(clock):
    store = FakeTable(clock)
    units = [f"0000:{n:02x}:00.0" for n in range(32)]
    spots = [workload("w" * 120 + f"{n:08d}", (u,)) for n, u in enumerate(units)]
    res = reservation(reserved=tuple(units), released=tuple(units), node_id="node-p")
    store.add(
        Node("node-p", "org-acme", topology_gen=10**9), [unit(u) for u in units], [res], spots
    )
    snapshot = store.load_node("node-p")
    signed = bind(plan_reclaim(snapshot, res, units), snapshot.node, 3600, NOW)
    text = encode_plan(signed, PlanScope("node-p", "res-1", "o" * 128), KEY)
    assert len(text) < 4096 <= MAX_PLAN_ID


def test_a_plan_takes_only_a_reason(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 2})["planId"]
    for body in (
        {"planId": plan, "dryRun": True},
        {"planId": plan, "dryRun": False},
        {"planId": plan, "count": 2},
        {"planId": plan, "unitIds": [P[2]]},
        {"planId": plan, "noticeSeconds": 0},
    ):
        with pytest.raises(InvalidRequest):
            post(lent, clock, queue, body)
    assert lent.writes == 0


def test_the_callers_permission_is_checked_again_at_apply(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 2})
    res = stored(lent)
    lent.nodes["node-p"].reservations["res-1"] = replace(res, managing_org_ids=())
    with pytest.raises(NotFound):
        post(lent, clock, queue, {"planId": plan["planId"]})
    assert lent.writes == 0


# --- what makes a plan stale, and what does not -------------------------------------------


def place(store, clock, workload_id, unit_ids, tier="spot"):
    body = {"id": workload_id, "kind": "vm", "tier": tier, "orgId": "org-spot"}
    raw = RawBody(json.dumps({**body, "unitIds": unit_ids}))
    assert place_workload(SCHEDULER, "node-p", raw, None, ports(store, clock)).status == 201


def test_a_placement_on_a_planned_unit_makes_it_stale_and_nothing_is_terminated(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 2})  # P2 and P6, both free
    place(lent, clock, "vm-new", [P[2]])
    with pytest.raises(PlanStale) as stale:
        post(lent, clock, queue, {"planId": plan["planId"]})
    problems = [d.problem for d in stale.value.details]
    assert f"unit {P[2]} changed since the plan (a placement or an end on it)" in problems
    assert "workload vm-new is on the plan's units and the plan did not name it" in problems
    assert lent.nodes["node-p"].workloads["vm-new"].state is WorkloadState.RUNNING
    assert QUEUE not in queue.messages
    assert stored(lent).released_unit_ids == tuple(P[:8])


def test_a_release_another_reclaim_and_an_end_each_make_a_plan_stale(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 5})["planId"]
    raw = RawBody(json.dumps({"unitIds": [P[8]]}))
    release(BROKER, "node-p", "res-1", raw, None, ports(lent, clock, queue))
    with pytest.raises(PlanStale, match="reservation res-1 changed"):
        post(lent, clock, queue, {"planId": plan})

    plan = plan_of(lent, clock, queue, {"count": 5})["planId"]
    assert post(lent, clock, queue, {"unitIds": [P[0]]})[0] == 200  # another reclaim
    with pytest.raises(PlanStale, match="reservation res-1 changed"):
        post(lent, clock, queue, {"planId": plan})

    plan = plan_of(lent, clock, queue, {"count": 6})["planId"]  # P1 (vm-b's) the 6th
    assert end_workload(SCHEDULER, "node-p", "vm-b", None, ports(lent, clock)).status == 204
    with pytest.raises(PlanStale) as stale:
        post(lent, clock, queue, {"planId": plan})
    assert "a workload the plan named is no longer on its units" in str(stale.value)
    assert lent.nodes["node-p"].workloads["vm-t"].termination.id == "t-old"


def test_a_change_elsewhere_on_the_node_leaves_the_plan_good(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 2})["planId"]  # P2 and P6
    place(lent, clock, "vm-elsewhere", [P[9]], tier="on-demand")  # nobody's unit
    lent.nodes["node-p"].node = replace(lent.nodes["node-p"].node, placements=7)
    assert post(lent, clock, queue, {"planId": plan})[0] == 200


def test_a_new_topology_makes_a_plan_stale(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 2})["planId"]
    lent.nodes["node-p"].node = replace(lent.nodes["node-p"].node, topology_gen=4)
    with pytest.raises(PlanStale, match="new topology"):
        post(lent, clock, queue, {"planId": plan})


class RacedOnce(FakeTable):
    """Loses its first commit to a writer that changed nothing the plan is bound to."""

    lost = 0

    def commit(self, write, answer=None):
        if self.lost < self.limit:
            self.lost += 1
            raise WriteConflict("TransactionConflict")
        super().commit(write, answer)


@pytest.mark.parametrize(("limit", "applied"), [(1, True), (MAX_ATTEMPTS, False)])
def test_an_unrelated_writer_is_retried_then_409_conflict(lent, clock, queue, limit, applied):
    plan = plan_of(lent, clock, queue, {"count": 2})["planId"]
    raced = RacedOnce.sharing(lent)
    raced.limit = limit
    body = RawBody(json.dumps({"planId": plan}))
    if applied:
        assert (
            reclaim(BROKER, "node-p", "res-1", body, None, ports(raced, clock, queue)).status == 200
        )
    else:
        with pytest.raises(Conflict):
            reclaim(BROKER, "node-p", "res-1", body, None, ports(raced, clock, queue))
        assert stored(lent).released_unit_ids == tuple(P[:8])


def test_a_plan_is_stale_when_its_units_were_reclaimed_by_count_meanwhile(lent, clock):
    queue = FakeQueue()
    plan = plan_of(lent, clock, queue, {"count": 8})["planId"]
    post(lent, clock, queue, {"count": 1}, key="k")
    with pytest.raises(PlanStale):
        post(lent, clock, queue, {"planId": plan})
    assert [m.workload_id for m in queue.messages.get(QUEUE, [])] == []


# --- the notice: a plan is bound to its dry run's -----------------------------------------


def requested_events(store: FakeTable) -> dict[str, dict]:
    """Each ``workload.termination_requested`` event's data, by its workload."""
    return {
        e.event.subject: e.event.envelope(True)["data"]
        for e in store.events
        if e.event.type.value == "workload.termination_requested"
    }


def test_a_plan_binds_its_dry_runs_notice_and_its_apply_gives_it(lent, clock, queue):
    """The dry run asks 120 s; the apply, 3 minutes later and saying nothing of a notice,
    terminates with terminateAt = its own commit (requestedAt) + 120 s, everywhere."""
    plan = plan_of(lent, clock, queue, {"count": 5, "noticeSeconds": 120})
    assert plan["wouldTerminate"] == ["vm-b", "vm-t"]
    assert "terminateAt" not in plan  # a dry run has no deadline
    clock.now = NOW + timedelta(minutes=3, microseconds=250_700)
    requested = NOW + timedelta(minutes=3, milliseconds=250)  # the commit, to the millisecond
    due = requested + timedelta(seconds=120)
    status, answer = post(lent, clock, queue, {"planId": plan["planId"]})
    assert status == 200
    assert answer["terminateAt"] == "2026-11-29T12:05:00.250Z"
    assert answer["terminated"] == ["vm-b", "vm-t"]
    termination = lent.nodes["node-p"].workloads["vm-b"].termination
    assert (termination.requested_at, termination.terminate_at) == (requested, due)
    # vm-t was terminating before the plan (stored before notices: due at its request, kept)
    events = requested_events(lent)
    assert set(events) == {"workloads/vm-b"}
    assert events["workloads/vm-b"]["requestedAt"] == "2026-11-29T12:03:00.250Z"
    assert events["workloads/vm-b"]["terminateAt"] == "2026-11-29T12:05:00.250Z"
    [message] = queue.sent(QUEUE)
    assert (message.workload_id, message.requested_at, message.terminate_at) == (
        "vm-b",
        requested,
        due,
    )


def test_a_plan_made_without_notice_applies_without_one(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 5})
    clock.now = NOW + timedelta(minutes=1)
    status, answer = post(lent, clock, queue, {"planId": plan["planId"]})
    assert status == 200
    assert answer["terminateAt"] == "2026-11-29T12:01:00Z"  # the apply's commit
    termination = lent.nodes["node-p"].workloads["vm-b"].termination
    assert termination.terminate_at == termination.requested_at == NOW + timedelta(minutes=1)


def test_the_apply_cannot_change_the_plans_notice(lent, clock, queue):
    plan = plan_of(lent, clock, queue, {"count": 5, "noticeSeconds": 600})["planId"]
    with pytest.raises(InvalidRequest) as refused:
        post(lent, clock, queue, {"planId": plan, "noticeSeconds": 5})
    assert [d.field for d in refused.value.details] == ["noticeSeconds"]
    # Nor by editing the payload: the notice is signed.
    payload, signature = plan.split(".")
    fields = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert fields["n"] == 600
    edited = base64.urlsafe_b64encode(json.dumps({**fields, "n": 5}).encode()).decode()
    with pytest.raises(InvalidRequest, match="planId"):
        post(lent, clock, queue, {"planId": f"{edited.rstrip('=')}.{signature}"})
    assert lent.writes == 0


def test_a_key_takes_a_count_with_a_notice_of_0_as_without_and_another_as_another_request(
    lent, clock, queue
):
    first = post(lent, clock, queue, {"count": 2}, key="n-0")
    assert post(lent, clock, queue, {"count": 2, "noticeSeconds": 0}, key="n-0") == first
    with pytest.raises(IdempotencyKeyReused):
        post(lent, clock, queue, {"count": 2, "noticeSeconds": 60}, key="n-0")
    assert stored(lent).released_unit_ids == tuple(u for u in P[:8] if u not in (P[2], P[6]))

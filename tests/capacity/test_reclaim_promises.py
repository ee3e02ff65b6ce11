"""A reclaim keeps the promises made to its spot workloads, over the fakes: each workload's
``terminateAt`` is the latest of the call's notice, the reservation's policy notice now, its
promised notice and its placement plus its promised minimum run (each winning in turn); the
answer's ``terminations``, the stored termination, the node's message and the event carry
it; a later, shorter reclaim never moves a deadline below the promises; a plan made before a
policy change is ``plan_stale``."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from reservations import endpoints
from reservations.capacity.errors import PlanStale
from reservations.capacity.policy import CLEAR_POLICY, SET_POLICY
from reservations.capacity.rules.deadlines import (
    call_deadline,
    moved_earlier,
    termination_deadline,
)
from reservations.kernel.bodies import RawBody
from reservations.kernel.pipeline import run_write
from reservations.nodes.models.partition import (
    LendingPolicy,
    Termination,
    TerminationState,
    WorkloadState,
)
from tests.support.fakes import FakeTable, ports
from tests.support.use_cases import BROKER, NOW, QUEUE, UNITS, reservation, workload
from tests.support.writes import reclaim

pytestmark = pytest.mark.disable_socket

# A real clock is never on the second: the deadlines keep the commit's milliseconds.
COMMIT = NOW + timedelta(microseconds=250_700)
AT_MS = NOW + timedelta(milliseconds=250)


def moment(at: datetime) -> str:
    """As the API writes a deadline: to the millisecond, none on a whole second."""
    text = at.strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{at.microsecond // 1000:03d}Z" if at.microsecond else "Z")


def promise(store: FakeTable, workload_id: str, notice=0, min_run=0, placed=NOW) -> None:
    """The workload as if placed at ``placed`` with these promises."""
    workloads = store.nodes["node-a"].workloads
    workloads[workload_id] = replace(
        workloads[workload_id],
        promised_notice_seconds=notice,
        promised_min_run_seconds=min_run,
        created_at=placed,
    )


def policy(store: FakeTable, **fields: int) -> None:
    """res-1's lending policy, as stored (no write: the version is the seed's)."""
    reservations = store.nodes["node-a"].reservations
    reservations["res-1"] = replace(reservations["res-1"], lending=LendingPolicy(False, **fields))


def answer(store, queue, clock, body):
    raw = RawBody(json.dumps(body))
    outcome = reclaim(BROKER, "node-a", "res-1", raw, None, ports(store, clock, queue))
    assert outcome.status == 200, outcome.body
    return json.loads(outcome.body)


def due(store: FakeTable, workload_id: str) -> datetime | None:
    termination = store.nodes["node-a"].workloads[workload_id].termination
    assert termination is not None
    return termination.terminate_at


def requested(store: FakeTable) -> dict[str, list[str]]:
    """Each workload's ``workload.termination_requested`` deadlines, in order."""
    events: dict[str, list[str]] = {}
    for e in store.events:
        if e.event.type.value == "workload.termination_requested":
            data = e.event.envelope(True)["data"]
            events.setdefault(e.event.subject.removeprefix("workloads/"), []).append(
                data["terminateAt"]
            )
    return events


def sent(queue) -> dict[str, list[datetime | None]]:
    messages: dict[str, list[datetime | None]] = {}
    for m in queue.sent(QUEUE):
        messages.setdefault(m.workload_id, []).append(m.terminate_at)
    return messages


# --- the rule ------------------------------------------------------------------------------


def test_the_call_deadline_is_the_larger_of_its_notice_and_the_policy_s():
    res = reservation()
    assert call_deadline(AT_MS, 60, res) == AT_MS + timedelta(seconds=60)  # no policy
    res = replace(res, lending=LendingPolicy(True, notice_seconds=300))
    assert call_deadline(AT_MS, 60, res) == AT_MS + timedelta(seconds=300)
    assert call_deadline(AT_MS, 900, res) == AT_MS + timedelta(seconds=900)


@pytest.mark.parametrize(
    ("notice", "min_run", "placed", "expected"),
    [
        (0, 0, NOW, AT_MS + timedelta(seconds=60)),  # the call's deadline
        (600, 0, NOW, AT_MS + timedelta(seconds=600)),  # the promised notice
        (0, 3600, NOW - timedelta(minutes=10), NOW + timedelta(minutes=50)),  # the minimum run
        (0, 3600, NOW - timedelta(hours=2), AT_MS + timedelta(seconds=60)),  # run out already
        (0, 3600, None, AT_MS + timedelta(seconds=60)),  # a fleet file's: no placement
    ],
)
def test_a_new_termination_is_due_at_the_latest_of_the_call_and_the_promises(
    notice, min_run, placed, expected
):
    spot = replace(
        workload("vm-1", (UNITS[0],)),
        promised_notice_seconds=notice,
        promised_min_run_seconds=min_run,
        created_at=placed,
    )
    assert termination_deadline(spot, AT_MS, AT_MS + timedelta(seconds=60)) == expected


def test_a_termination_under_way_moves_to_the_call_but_never_below_its_first_ask_s_promise():
    first_ask = NOW - timedelta(minutes=1)
    terminating = replace(
        workload("vm-1", (UNITS[0],), state=WorkloadState.TERMINATING),
        promised_notice_seconds=600,
        termination=Termination(
            "t-1", requested_at=first_ask, terminate_at=first_ask + timedelta(hours=1)
        ),
    )
    [(_, moved)] = moved_earlier([terminating], NOW)
    assert moved == first_ask + timedelta(seconds=600)  # not NOW, not NOW + 600
    kept = replace(terminating, termination=replace(terminating.termination, terminate_at=moved))
    assert moved_earlier([kept], NOW) == ()


# --- each of the four wins ----------------------------------------------------------------


def test_the_call_s_notice_wins_over_smaller_policy_and_promises(store, queue, clock):
    clock.now = COMMIT
    policy(store, notice_seconds=30)
    promise(store, "vm-spot", notice=10, min_run=600, placed=NOW - timedelta(hours=1))
    body = answer(store, queue, clock, {"unitIds": [UNITS[0]], "noticeSeconds": 120})
    deadline = AT_MS + timedelta(seconds=120)
    assert body["terminateAt"] == moment(deadline)
    [entry] = body["terminations"]
    assert entry == {
        "workloadId": "vm-spot",
        "terminationId": store.nodes["node-a"].workloads["vm-spot"].termination.id,
        "terminateAt": moment(deadline),
    }
    assert due(store, "vm-spot") == deadline


def test_the_policy_s_notice_wins_and_is_the_call_s_own_deadline(store, queue, clock):
    clock.now = COMMIT
    policy(store, notice_seconds=300)
    promise(store, "vm-spot", notice=10)
    body = answer(store, queue, clock, {"unitIds": [UNITS[0]], "noticeSeconds": 60})
    deadline = AT_MS + timedelta(seconds=300)
    assert body["terminateAt"] == moment(deadline)  # the larger of the two notices
    assert [t["terminateAt"] for t in body["terminations"]] == [moment(deadline)]
    assert due(store, "vm-spot") == deadline
    assert sent(queue) == {"vm-spot": [deadline]}


def test_the_promised_notice_and_the_minimum_run_win_per_workload_everywhere(store, queue, clock):
    clock.now = COMMIT
    promise(store, "vm-spot", notice=900)
    placed = NOW - timedelta(minutes=10)
    promise(store, "vm-span", min_run=3600, placed=placed)
    body = answer(store, queue, clock, {"unitIds": [UNITS[0], UNITS[1]], "noticeSeconds": 60})
    call = AT_MS + timedelta(seconds=60)
    spot, span = AT_MS + timedelta(seconds=900), placed + timedelta(seconds=3600)
    assert body["terminateAt"] == moment(call)  # the call's own deadline
    assert body["terminated"] == ["vm-span", "vm-spot"]
    workloads = store.nodes["node-a"].workloads
    assert body["terminations"] == [
        {
            "workloadId": "vm-span",
            "terminationId": workloads["vm-span"].termination.id,
            "terminateAt": moment(span),
        },
        {
            "workloadId": "vm-spot",
            "terminationId": workloads["vm-spot"].termination.id,
            "terminateAt": moment(spot),
        },
    ]
    # Stored, sent to the node, and in each workload's event: its own deadline.
    assert (due(store, "vm-spot"), due(store, "vm-span")) == (spot, span)
    assert sent(queue) == {"vm-spot": [spot], "vm-span": [span]}
    assert requested(store) == {"vm-spot": [moment(spot)], "vm-span": [moment(span)]}
    for workload_id, expected in (("vm-spot", spot), ("vm-span", span)):
        outbox = [t for t in store.listed(TerminationState.OPEN) if t.workload.id == workload_id]
        assert [t.termination.terminate_at for t in outbox] == [expected]


def test_by_count_the_promises_hold_too(store, queue, clock):
    clock.now = COMMIT
    promise(store, "vm-spot", notice=900)
    raw = RawBody(json.dumps({"count": 3, "noticeSeconds": 5}))
    outcome = reclaim(BROKER, "node-a", "res-1", raw, "count-1", ports(store, clock, queue))
    body = json.loads(outcome.body)
    assert "vm-spot" in body["terminated"]
    assert due(store, "vm-spot") == AT_MS + timedelta(seconds=900)
    assert body["terminateAt"] == moment(AT_MS + timedelta(seconds=5))


def test_terminations_lists_one_under_way_with_its_own_deadline(store, queue, clock):
    body = answer(store, queue, clock, {"unitIds": [UNITS[4]]})  # vm-term, from before
    assert body["terminations"] == [
        {"workloadId": "vm-term", "terminationId": "t-old", "terminateAt": "2026-11-29T11:55:00Z"}
    ]


def test_a_reclaim_that_terminates_nothing_lists_no_terminations(store, queue, clock):
    body = answer(store, queue, clock, {"unitIds": [UNITS[3]]})  # reserved: skipped
    assert body["terminations"] == []
    assert "terminations" not in answer(
        store, queue, clock, {"unitIds": [UNITS[0]], "dryRun": True}
    )


# --- a later reclaim with a shorter notice ------------------------------------------------


def test_a_shorter_notice_later_never_moves_a_deadline_below_the_promised_notice(
    store, queue, clock
):
    clock.now = COMMIT
    promise(store, "vm-spot", notice=600)
    answer(store, queue, clock, {"unitIds": [UNITS[0]], "noticeSeconds": 3600})
    assert due(store, "vm-spot") == AT_MS + timedelta(seconds=3600)
    clock.now = COMMIT + timedelta(seconds=10)
    body = answer(store, queue, clock, {"unitIds": [UNITS[0]], "noticeSeconds": 5})
    floor = AT_MS + timedelta(seconds=600)  # the first reclaim's commit + the promise
    assert due(store, "vm-spot") == floor
    assert body["terminations"][0]["terminateAt"] == moment(floor)
    assert sent(queue) == {"vm-spot": [AT_MS + timedelta(seconds=3600), floor]}
    assert requested(store)["vm-spot"][-1] == moment(floor)
    # Once there, no shorter notice moves it again, and nothing is sent.
    clock.now = COMMIT + timedelta(seconds=20)
    answer(store, queue, clock, {"unitIds": [UNITS[0]]})
    assert due(store, "vm-spot") == floor
    assert len(sent(queue)["vm-spot"]) == 2


def test_a_shorter_notice_later_never_moves_a_deadline_below_the_minimum_run(store, queue, clock):
    placed = NOW - timedelta(minutes=1)
    promise(store, "vm-spot", min_run=1800, placed=placed)
    answer(store, queue, clock, {"unitIds": [UNITS[0]], "noticeSeconds": 3600})
    clock.now = NOW + timedelta(seconds=10)
    answer(store, queue, clock, {"unitIds": [UNITS[0]]})
    assert due(store, "vm-spot") == placed + timedelta(seconds=1800)


def test_a_shorter_notice_still_moves_a_deadline_down_to_the_promise(store, queue, clock):
    promise(store, "vm-spot", notice=60)
    answer(store, queue, clock, {"unitIds": [UNITS[0]], "noticeSeconds": 3600})
    clock.now = NOW + timedelta(seconds=100)
    answer(store, queue, clock, {"unitIds": [UNITS[0]], "noticeSeconds": 120})
    assert due(store, "vm-spot") == NOW + timedelta(seconds=220)  # this call's: above 60 s


# --- a plan binds the policy ----------------------------------------------------------------


def set_policy(store, queue, clock, body):
    route = endpoints.SET_LENDING.at(nodeId="node-a", reservationId="res-1")
    raw = RawBody(json.dumps(body))
    return run_write(SET_POLICY, route, BROKER, raw, None, ports(store, clock, queue))


def test_a_plan_applies_the_policy_s_notice_it_was_made_under(store, queue, clock):
    assert set_policy(store, queue, clock, {"auto": False, "noticeSeconds": 300}).status == 200
    plan = answer(store, queue, clock, {"unitIds": [UNITS[0]], "dryRun": True})
    body = answer(store, queue, clock, {"planId": plan["planId"]})
    assert body["terminateAt"] == moment(NOW + timedelta(seconds=300))
    assert due(store, "vm-spot") == NOW + timedelta(seconds=300)


@pytest.mark.parametrize("change", ["set", "clear"])
def test_a_policy_changed_after_the_dry_run_makes_the_plan_stale(store, queue, clock, change):
    assert set_policy(store, queue, clock, {"auto": False, "noticeSeconds": 300}).status == 200
    plan = answer(store, queue, clock, {"unitIds": [UNITS[0]], "dryRun": True})
    if change == "set":
        assert set_policy(store, queue, clock, {"auto": False, "noticeSeconds": 0}).status == 200
    else:
        route = endpoints.CLEAR_LENDING.at(nodeId="node-a", reservationId="res-1")
        cleared = run_write(
            CLEAR_POLICY, route, BROKER, RawBody(None), None, ports(store, clock, queue)
        )
        assert cleared.status == 204
    writes = store.writes
    with pytest.raises(PlanStale, match="reservation res-1 changed"):
        answer(store, queue, clock, {"planId": plan["planId"]})
    assert store.writes == writes
    assert store.nodes["node-a"].workloads["vm-spot"].state is WorkloadState.RUNNING

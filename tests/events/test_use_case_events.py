"""Which events each use case commits with its write, over the fakes (``FakeTable.events``: a
committed write's events, a stuck flag's): a real run, not a dry run, not a refusal, not a
replay; a reclaim's termination requests; a report's and the sweeper's own events."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import ApiError
from reservations.terminations import sweeper
from reservations.terminations.models import TerminationReport
from reservations.terminations.reports import apply_report
from reservations.terminations.rules.delivery import RedeliveryPolicy
from tests.support.fakes import ports
from tests.support.use_cases import BROKER, NOW, UNITS
from tests.support.writes import reclaim

pytestmark = pytest.mark.disable_socket


def run(store, queue, clock, body, key=None):
    outcome = reclaim(BROKER, "node-a", "res-1", RawBody(json.dumps(body)), key,
                      ports(store, clock, queue))  # fmt: skip
    return json.loads(outcome.body)


def types(store) -> list[str]:
    return [stored.event.type.value for stored in store.events]


def test_a_reclaim_commits_its_event_and_one_request_per_new_termination(store, queue, clock):
    """vm-spot and vm-span are terminated now; vm-term, already terminating, is not
    requested again (it is listed as terminated)."""
    answer = run(store, queue, clock, {"unitIds": UNITS, "reason": "lab"})
    assert answer["terminated"] == ["vm-span", "vm-spot", "vm-term"]
    assert types(store) == ["reservation.reclaimed", *["workload.termination_requested"] * 2]
    reclaimed, *requested = store.events
    assert reclaimed.event.data["terminated"] == ["vm-span", "vm-spot", "vm-term"]
    assert reclaimed.event.actor is not None
    assert (reclaimed.event.actor.org_id, reclaimed.event.actor.key_id) == (
        "org-broker",
        "key-broker",
    )
    assert sorted(r.event.subject for r in requested) == ["workloads/vm-span", "workloads/vm-spot"]
    # The workload's org and the reclaiming reservation's managers see the request.
    assert {r.audience_org_ids for r in requested} == {frozenset({"org-spot", "org-broker"})}


def test_a_reclaims_events_carry_its_reason_and_the_reservation_as_it_leaves_it(
    store, queue, clock
):
    run(store, queue, clock, {"unitIds": [UNITS[0]], "reason": "lab"})
    reclaimed, requested = store.events
    assert reclaimed.event.data == {
        "reason": "lab", "unitIds": [UNITS[0]], "releasedUnitIds": UNITS[1:3],
        "terminated": ["vm-spot"], "skipped": [],
    }  # fmt: skip
    assert (requested.event.data["reason"], requested.event.data["reservationId"]) == (
        "lab",
        "res-1",
    )


def test_a_dry_run_is_no_event(store, queue, clock):
    run(store, queue, clock, {"unitIds": UNITS, "dryRun": True})
    assert store.events == []


def test_a_refusal_is_no_event(store, queue, clock):
    with pytest.raises(ApiError):
        run(store, queue, clock, {"unitIds": ["0000:7f:00.0"]})
    assert store.events == []


def test_a_replay_is_no_second_event(store, queue, clock):
    first = run(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1")
    again = run(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1")
    assert first == again
    assert types(store) == ["reservation.reclaimed", "workload.termination_requested"]


def test_a_report_closes_with_workload_terminated_for_the_reclaimers_too(store, queue, clock):
    """The reservation's managers, stored on the workload by the reclaim, see its end."""
    run(store, queue, clock, {"unitIds": [UNITS[0]]})
    termination_id = store.nodes["node-a"].workloads["vm-spot"].termination.id
    reported = NOW + timedelta(seconds=3, milliseconds=250)
    report = TerminationReport(termination_id=termination_id, node_id="node-a",
                               workload_id="vm-spot", outcome="gone", reported_at=reported)  # fmt: skip
    assert apply_report(report, NOW + timedelta(seconds=4), store, store) == "closed"
    terminated = store.events[-1]
    assert terminated.event.type.value == "workload.terminated"
    assert terminated.event.actor is None  # the service's own
    assert (terminated.event.data["outcome"], terminated.event.data["time"]) == (
        "gone",
        "2026-11-29T12:00:03.250Z",
    )
    assert terminated.audience_org_ids == {"org-spot", "org-broker"}
    # A duplicate report closes nothing: no second event.
    assert apply_report(report, NOW + timedelta(seconds=5), store, store) == "unknown"
    assert types(store).count("workload.terminated") == 1


def test_the_sweepers_flag_is_workload_termination_stuck_named_by_its_deliveries(store, queue):
    policy = RedeliveryPolicy(
        grace=timedelta(seconds=60),
        confirm_deadline=timedelta(seconds=600),
        stuck_resend=timedelta(seconds=3600),
        max_deliveries=1,
    )
    at = NOW
    counts = {}
    for _ in range(3):
        at += timedelta(seconds=700)
        counts = dict(sweeper.sweep(at, policy, store, queue.send))
    assert counts in ({"gave_up": 1}, {"stuck": 1})
    [stuck] = store.events
    assert stuck.event.type.value == "workload.termination_stuck"
    assert (stuck.event.data["terminationId"], stuck.event.data["deliveries"]) == ("t-old", 1)
    assert stuck.audience_org_ids == frozenset()  # the operator's and the owner's alone
    assert stuck.owner_org_id == "org-acme"
    expected = sweeper.stuck_event(
        store.read("node-a", "vm-term"), "org-acme", stuck.event.time
    )  # the change id: "t-old#stuck#1", so its id is the same when built again
    assert expected.id == stuck.id

"""The soak's auditor (``reservations_tools.soak``) on records written by hand: a clean one
holds every invariant with cases judged for each, and a fault planted in it breaks the
invariant it is about (and only that one), printed with the seed and its events."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations_tools.soak.audit import audit, latencies, main, render
from reservations_tools.soak.record import Record

pytestmark = pytest.mark.disable_socket

T0 = datetime(2031, 3, 3, 8, 0, 7, tzinfo=UTC)
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
NODE = "node-a"
INVARIANTS = ["claims", "lent", "terminations", "notices", "followers", "usage", "calls"]


def at(seconds: float) -> str:
    moment = T0 + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def event(n: int, type_: str, seconds: float, subject: str, **data: Any) -> dict[str, Any]:
    return {"specversion": "1.0", "id": f"evt-{n:04d}", "type": type_,
            "source": f"/v1/nodes/{NODE}", "subject": subject, "time": at(seconds),
            "datacontenttype": "application/json", "data": data}  # fmt: skip


def spot(units: list[str], notice: int = 0, min_run: int = 0) -> dict[str, Any]:
    return {"kind": "vm", "tier": "spot", "orgId": "org-spotbuyer", "unitIds": units,
            "promisedNoticeSeconds": notice, "promisedMinRunSeconds": min_run}  # fmt: skip


def terminating(workload: dict[str, Any], tid: str, requested: float, due: float) -> dict[str, Any]:
    return {**workload, "terminationId": tid, "reservationId": "res-1",
            "requestedAt": at(requested), "terminateAt": at(due)}  # fmt: skip


def clean_feed() -> list[dict[str, Any]]:
    """A node of three units (1, 1 and 2 GPUs); res-1 holds all three, lends 04 and 05; a
    spot VM on 04 promised 30 s of notice is reclaimed and stopped at its deadline; one on
    05 is taken back by the audience's placement, which waits for it and then starts; a
    third spot VM is placed on 04 again and ends on its own."""
    vm1, vm2 = spot([U4], notice=30, min_run=60), spot([U5])
    lab = {"kind": "vm", "tier": "reserved", "orgId": "org-lab", "unitIds": [U5]}
    units = [{"id": U4, "sellableGpus": 1}, {"id": U5, "sellableGpus": 1},
             {"id": U6, "sellableGpus": 2}]  # fmt: skip
    return [
        event(1, "node.registered", 0, f"nodes/{NODE}", addedUnitIds=[U4, U5, U6], units=units),
        event(2, "reservation.created", 1, "reservations/res-1", unitIds=[U4, U5, U6],
              startsAt=at(1)[:19] + "Z", endsAt=None, allowedOrgIds=["org-lab"]),
        event(3, "reservation.released", 2, "reservations/res-1", unitIds=[U4, U5],
              releasedUnitIds=[U4, U5]),
        event(4, "workload.placed", 3, "workloads/vm-1", **vm1),
        event(5, "workload.placed", 4, "workloads/vm-2", **vm2),
        event(6, "reservation.reclaimed", 100, "reservations/res-1", unitIds=[U4],
              releasedUnitIds=[U5], terminated=["vm-1"]),
        event(7, "workload.termination_requested", 100, "workloads/vm-1",
              **terminating(vm1, "term-1", 100, 130)),
        event(8, "workload.terminated", 131, "workloads/vm-1", **vm1, outcome="terminated",
              time=at(130.2), terminationId="term-1"),
        event(9, "reservation.reclaimed", 140, "reservations/res-1", unitIds=[U5],
              releasedUnitIds=[], terminated=["vm-2"], cause="placement"),
        event(10, "workload.placed", 140, "workloads/vm-lab", **lab, state="waiting",
              reservationId="res-1", waitingFor=[{"workloadId": "vm-2"}]),
        event(11, "workload.termination_requested", 140, "workloads/vm-2",
              **terminating(vm2, "term-2", 140, 140)),
        event(12, "workload.terminated", 141, "workloads/vm-2", **vm2, outcome="gone",
              time=at(140.5), terminationId="term-2"),
        event(13, "workload.started", 141, "workloads/vm-lab", **lab, state="running"),
        event(14, "reservation.released", 150, "reservations/res-1", unitIds=[U4],
              releasedUnitIds=[U4]),
        event(15, "workload.placed", 151, "workloads/vm-3", **spot([U4])),
        event(16, "workload.ended", 160, "workloads/vm-3", **spot([U4]), freedUnitIds=[U4]),
    ]  # fmt: skip


def usage_rows(registered: float = 0) -> list[dict[str, Any]]:
    """The node's row for 08:00-09:00 counted to 08:30 (units 4 x 1, 1, 2 GPUs from the
    registration), and res-1's, which governs all three units."""
    start = T0.replace(minute=0, second=0)
    as_of = start + timedelta(minutes=30)
    span = int((as_of - T0).total_seconds() * 1000) - int(registered * 1000)
    node = {"lent_used": span, "reserved_idle": span, "reserved_used": span - 5000,
            "open_idle": 5000}  # fmt: skip
    gpus = {"lent_used": span, "reserved_idle": 2 * span, "reserved_used": span - 5000,
            "open_idle": 5000}  # fmt: skip
    common = {"nodeId": NODE, "start": start.isoformat(), "end": (start + timedelta(hours=1))
              .isoformat(), "asOf": as_of.isoformat()}  # fmt: skip
    governed = {k: v for k, v in node.items() if k != "open_idle"}
    governed_gpus = {k: v for k, v in gpus.items() if k != "open_idle"}
    return [
        {"id": f"{NODE}/hour/x", **common, "unitMs": node, "gpuMs": gpus},
        {"id": f"{NODE}/res-1/hour/x", **common, "reservationId": "res-1",
         "unitMs": governed, "gpuMs": governed_gpus},
    ]  # fmt: skip


CALLS = [
    {"call": "c-1", "op": "reclaim", "status": 503, "retryAfter": "2", "ms": 12.0},
    {"call": "c-1", "op": "reclaim", "status": 200, "ms": 20.0},
    {"call": "c-2", "op": "place", "status": 409, "ms": 8.0},
    {"call": "c-3", "op": "place", "status": 201, "ms": 9.0},
]


def record(
    feed: list[dict[str, Any]] | None = None,
    followers: dict[str, list[str]] | None = None,
    calls: list[dict[str, Any]] | None = None,
    usage: list[dict[str, Any]] | None = None,
) -> Record:
    feed = clean_feed() if feed is None else feed
    every = [e["id"] for e in feed]
    return Record.of(
        {NODE: feed},
        followers if followers is not None else {"org-feed": every, "bus": every + every[:3]},
        CALLS if calls is None else calls,
        usage_rows() if usage is None else usage,
        seed=42,
        recorded_at=at(3600),
    )


def broken(rec: Record) -> dict[str, list[str]]:
    """Each invariant's violations, by name (only the broken ones)."""
    report = audit(rec)
    return {o.name: [v.text for v in o.violations] for o in report.outcomes if o.violations}


def test_a_clean_record_holds_every_invariant_with_cases_for_each():
    report = audit(record())
    assert report.violations == 0, render(report)
    cases = {o.name: o.cases for o in report.outcomes}
    assert [name for name in INVARIANTS if cases[name] == 0] == []
    assert cases["claims"] == 5  # four placements' units and one start
    assert cases["terminations"] == 2
    text = render(report)
    assert "audit (seed 42): 16 events on 1 node(s)" in text
    assert "0 violation(s) (seed 42)" in text


def test_the_order_an_event_is_delivered_in_or_a_copy_of_it_changes_nothing():
    feed = clean_feed()
    shuffled = random.Random(3).sample(feed, len(feed))
    assert audit(record(shuffled + feed[:5])).violations == 0


def test_a_doubled_claim_breaks_the_claims_only():
    feed = clean_feed()
    feed.insert(4, event(90, "workload.placed", 3.5, "workloads/vm-9", **spot([U4])))
    assert broken(record(feed)) == {"claims": ["0000:04:00.0 claimed by vm-9 while vm-1 holds it"]}


def test_a_placement_after_the_end_that_freed_its_unit_is_no_doubled_claim():
    feed = clean_feed()
    feed.append(event(91, "workload.placed", 160, "workloads/vm-4", **spot([U4])))
    assert broken(record(feed)) == {}


def test_a_spot_workload_on_a_unit_not_lent_breaks_the_lending():
    feed = clean_feed()
    feed.append(event(92, "workload.placed", 170, "workloads/vm-6", **spot([U6])))
    assert broken(record(feed)) == {
        "lent": ["spot vm-6 of org-spotbuyer placed on 0000:06:00.0, which its reservation "
                 "had not lent"]
    }  # fmt: skip


def test_a_spot_workload_placed_as_its_units_were_lent_in_the_same_millisecond_is_judged_both_ways():
    feed = clean_feed()
    feed.append(event(93, "reservation.released", 170, "reservations/res-1", unitIds=[U6],
                      releasedUnitIds=[U4, U6]))  # fmt: skip
    feed.append(event(94, "workload.placed", 170, "workloads/vm-6", **spot([U6])))
    assert broken(record(feed)) == {}


def test_a_lost_termination_breaks_the_terminations():
    """vm-1 is never reported stopped (nor is 04 used again: it is still claimed)."""
    feed = [e for e in clean_feed() if e["id"] not in ("evt-0008", "evt-0015", "evt-0016")]
    assert broken(record(feed)) == {"terminations": ["term-1 of vm-1 never closed (lost)"]}


def test_a_termination_still_due_when_the_record_was_taken_is_in_flight():
    feed = [e for e in clean_feed() if e["id"] not in ("evt-0008", "evt-0015", "evt-0016")]
    rec = record(feed)
    rec.recorded_at = rec.nodes[NODE][6].at + 10_000
    report = audit(rec)
    assert report.violations == 0
    [terminations] = [o for o in report.outcomes if o.name == "terminations"]
    assert terminations.notes["in flight at the record's end"] == 1


def test_a_doubled_termination_breaks_the_terminations():
    feed = clean_feed()
    again = {**feed[7], "id": "evt-0800", "time": at(135)}
    assert broken(record([*feed, again])) == {"terminations": ["term-1 closed 2 times"]}


def test_a_termination_never_requested_breaks_the_terminations():
    feed = clean_feed()
    feed.append(event(95, "workload.terminated", 200, "workloads/vm-3", **spot([U4]),
                      outcome="terminated", time=at(199), terminationId="term-x"))  # fmt: skip
    assert broken(record(feed)) == {"terminations": ["term-x closed but never requested"]}


def test_a_broken_notice_breaks_the_notices():
    feed = clean_feed()
    vm1 = spot([U4], notice=30, min_run=60)
    feed[6] = event(7, "workload.termination_requested", 100, "workloads/vm-1",
                    **terminating(vm1, "term-1", 100, 110))  # fmt: skip
    feed[7]["data"]["time"] = at(110)
    assert broken(record(feed)) == {
        "notices": ["vm-1's terminateAt 2031-03-03T08:01:57.000Z before its promises allow "
                    "(2031-03-03T08:02:17.000Z: notice 30 s, minimum run 60 s)"]
    }  # fmt: skip


def test_a_minimum_run_counts_from_the_placement_to_the_second():
    """Placed at 08:00:10.600 (``createdAt`` 08:00:10), 200 s of minimum run: due no
    earlier than 08:03:30, not 08:03:30.600."""
    vm1 = spot([U4], notice=0, min_run=200)

    def feed(due: float) -> list[dict[str, Any]]:
        events = clean_feed()
        events[3] = event(4, "workload.placed", 3.6, "workloads/vm-1", **vm1)
        events[6] = event(7, "workload.termination_requested", 100, "workloads/vm-1",
                          **terminating(vm1, "term-1", 100, due))  # fmt: skip
        events[7]["data"]["time"] = at(due)
        return events

    assert broken(record(feed(203))) == {}
    assert broken(record(feed(202.9))) == {
        "notices": ["vm-1's terminateAt 2031-03-03T08:03:29.900Z before its promises allow "
                    "(2031-03-03T08:03:30.000Z: notice 0 s, minimum run 200 s)"]
    }  # fmt: skip


def test_a_workload_stopped_before_its_deadline_breaks_the_notices():
    feed = clean_feed()
    feed[7]["data"]["time"] = at(129.5)
    assert broken(record(feed)) == {
        "notices": ["vm-1 stopped at 2031-03-03T08:02:16.500Z, before its deadline "
                    "2031-03-03T08:02:17.000Z"]
    }  # fmt: skip


def test_a_deadline_moved_earlier_still_keeps_the_first_requests_notice():
    feed = clean_feed()
    vm1 = spot([U4], notice=30, min_run=60)
    moved = terminating(vm1, "term-1", 100, 125)  # the first request's + 25 s: too early
    feed.insert(7, event(96, "workload.termination_requested", 110, "workloads/vm-1", **moved))
    feed[8]["data"]["time"] = at(125)
    assert list(broken(record(feed))) == ["notices"]


def test_a_follower_missing_an_event_breaks_the_followers():
    every = [e["id"] for e in clean_feed()]
    missing = [i for i in every if i != "evt-0011"]
    assert broken(record(followers={"org-feed": every, "webhook": missing})) == {
        "followers": ["webhook missed 1 event(s): ['evt-0011']"]
    }


@pytest.mark.parametrize(
    ("delivery", "owed"),
    [
        (
            {"state": "pending", "nextAttemptAt": at(3600 + 1500)},
            "pending, its next attempt not overdue",
        ),
        (
            {"state": "pending", "nextAttemptAt": at(3600 - 30)},
            "pending, its next attempt not overdue",
        ),
        ({"state": "failed"}, "failed after its attempts (kept, retried by hand)"),
    ],
)
def test_an_event_the_webhook_sender_still_owes_is_no_miss(delivery, owed):
    """A receiver down across a delivery's first attempts gets it 5 or 30 minutes later:
    pending with its next attempt still to come (within a minute's grace of the record), or
    failed (kept for a retry by hand), the event is owed, not lost."""
    every = [e["id"] for e in clean_feed()]
    rec = record(followers={"webhook": [i for i in every if i != "evt-0011"]})
    rec.owed = {"webhook": {"evt-0011": delivery}}
    report = audit(rec)
    assert report.violations == 0, render(report)
    [followers] = [o for o in report.outcomes if o.name == "followers"]
    assert followers.notes[f"webhook: owed, {owed}"] == 1


@pytest.mark.parametrize(
    "delivery",
    [
        {"state": "pending", "nextAttemptAt": at(3600 - 120)},  # overdue: the sender is late
        {"state": "delivered"},  # counted delivered, never received
        {"state": "pending"},  # no next attempt said
        {},  # a delivery the service does not know
    ],
)
def test_an_event_the_webhook_sender_does_not_owe_is_missed(delivery):
    every = [e["id"] for e in clean_feed()]
    rec = record(followers={"webhook": [i for i in every if i != "evt-0011"]})
    rec.owed = {"webhook": {"evt-0011": delivery}}
    assert broken(rec) == {"followers": ["webhook missed 1 event(s): ['evt-0011']"]}


def test_a_delivery_owed_to_one_follower_excuses_no_other():
    every = [e["id"] for e in clean_feed()]
    rec = record(followers={"bus": [i for i in every if i != "evt-0011"]})
    rec.owed = {"webhook": {"evt-0011": {"state": "failed"}}}
    assert broken(rec) == {"followers": ["bus missed 1 event(s): ['evt-0011']"]}


def test_a_follower_given_an_event_no_feed_holds_breaks_the_followers():
    every = [e["id"] for e in clean_feed()]
    assert broken(record(followers={"bus": [*every, "evt-9999"]})) == {
        "followers": ["bus received 1 event(s) no feed holds: ['evt-9999']"]
    }


def test_followers_are_judged_on_the_events_of_their_window():
    every = [e["id"] for e in clean_feed()]
    rec = record(followers={"bus": every[:11]})  # up to 140 s; evt-0012 on came later
    rec.followed_until = rec.nodes[NODE][10].at
    report = audit(rec)
    assert report.violations == 0, render(report)
    [followers] = [o for o in report.outcomes if o.name == "followers"]
    assert (followers.cases, followers.notes["events after the followers' window"]) == (11, 5)
    rec.followed_until = rec.nodes[NODE][11].at  # 141 s: evt-0012 and evt-0013
    assert broken(rec) == {"followers": ["bus missed 2 event(s): ['evt-0012', 'evt-0013']"]}


def test_usage_that_does_not_balance_breaks_the_usage():
    rows = usage_rows()
    rows[0]["unitMs"]["open_idle"] += 1
    rows[0]["unitMs"]["reserved_idle"] += 7
    assert sorted(broken(record(usage=rows))["usage"]) == [
        "node-a/hour/x: unitMs sum 5379008 (units x time: 5379000), gpuMs sum 7172000 "
        "(GPUs x time: 7172000)",
        "node-a/hour/x: unitMs.reserved_idle 1793007, its reservations' rows 1793000",
    ]


def test_rows_by_reservation_read_a_moment_later_are_not_compared_with_the_nodes():
    rows = usage_rows()
    later = rows[1]["asOf"].replace("08:30:00", "08:30:01")
    rows[1] = {**rows[1], "asOf": later, "unitMs": {**rows[1]["unitMs"], "lent_used": 1}}
    report = audit(record(usage=rows))
    assert report.violations == 0, render(report)
    [usage] = [o for o in report.outcomes if o.name == "usage"]
    assert usage.notes["node rows read at another moment than their reservations'"] == 1


@pytest.mark.parametrize(
    ("attempts", "violation"),
    [
        ([{"call": "c", "op": "get", "status": 500}, {"call": "c", "op": "get", "status": 200}],
         "c (get): 500 without Retry-After"),
        ([{"call": "c", "op": "get", "status": 503}, {"call": "c", "op": "get", "status": 200}],
         "c (get): 503 without Retry-After"),
        ([{"call": "c", "op": "get", "status": 503, "retryAfter": "2"}],
         "c (get): its last answer was 503"),
    ],
)  # fmt: skip
def test_a_5xx_that_is_not_a_retried_503_breaks_the_calls(attempts, violation):
    assert broken(record(calls=attempts)) == {"calls": [violation]}


def test_a_violation_is_printed_with_the_seed_and_the_events_around_it():
    feed = clean_feed()
    feed.insert(4, event(90, "workload.placed", 3.5, "workloads/vm-9", **spot([U4])))
    text = render(audit(record(feed)))
    lines = text.splitlines()
    start = lines.index(
        "VIOLATION [claims] (seed 42): 0000:04:00.0 claimed by vm-9 while vm-1 holds it"
    )
    shown = lines[start + 1 : start + 5]
    assert [entry.split()[2:4] for entry in shown] == [
        ["reservation.created", "res-1"],
        ["reservation.released", "res-1"],
        ["workload.placed", "vm-1"],
        ["workload.placed", "vm-9"],
    ]
    assert "  BROKEN claims" in text
    assert lines[-1] == "1 violation(s) (seed 42)"


def test_the_command_reads_a_record_file_and_exits_1_on_a_violation(tmp_path, capsys):
    path = tmp_path / "record.json"

    def write(feed: list[dict[str, Any]]) -> None:
        path.write_text(json.dumps({"seed": 5, "nodes": {NODE: feed}, "calls": CALLS}))

    write(clean_feed())
    assert main([str(path)]) == 0
    # What the webhook receiver had not had is read with what its delivery said.
    every = [e["id"] for e in clean_feed()]
    document = {"seed": 5, "nodes": {NODE: clean_feed()}, "recordedAt": at(3600),
                "followers": {"webhook": every[1:]}, "owed": {"webhook": {every[0]: {}}}}  # fmt: skip
    path.write_text(json.dumps(document))
    assert main([str(path)]) == 1
    document["owed"] = {"webhook": {every[0]: {"state": "pending", "nextAttemptAt": at(3700)}}}
    path.write_text(json.dumps(document))
    assert main([str(path)]) == 0
    write([e for e in clean_feed() if e["id"] not in ("evt-0008", "evt-0015", "evt-0016")])
    assert main([str(path)]) == 1
    assert "term-1 of vm-1 never closed (lost)" in capsys.readouterr().out


def test_the_latencies_per_operation():
    assert latencies(record().calls) == {"reclaim": (2, 16.0, 19.92), "place": (2, 8.5, 8.99)}

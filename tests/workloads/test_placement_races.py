"""Placements racing reclaims on the same units, against the local emulator.

Every round, on a node of its own, the broker reclaims some released units while the
scheduler places spot VMs on some of the same units, each call in its own forked process
(as in its own Lambda container). In most rounds a barrier after each one's first read makes
them all decide from the same snapshot, where every placement looks allowed; in the others
they start together and interleave as they will. After each round the stored state must
show neither failure the conditional writes exist to prevent:

- a spot workload left running (not terminating) on a unit its governing reservation no
  longer releases: a placement landed on data a reclaim had already changed;
- a lost reclaim: a reclaim answered 200, yet a unit it named is still released, or a spot
  workload on such a unit is still running, or a termination it committed was never queued.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import end_event, place_event, reclaim_event
from tests.support import state
from tests.support.forks import Call, barrier_after_first_read, concurrently

pytestmark = pytest.mark.races

BROKER = "Bearer vl_local_test_broker"
SCHEDULER = "Bearer vl_local_test_scheduler"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
ROUNDS = 24
# What the last run saw, for whoever reads the test output (``-s``).
FIGURES: Counter[str] = Counter()


def _fleet(nodes: list[str]) -> dict[str, Any]:
    keys = [
        {
            "key": "vl_local_test_scheduler",
            "orgId": "org-platform",
            "permissions": ["workload.place"],
        }
    ]
    released = [f.reservation("res-1", UNITS, releasedUnitIds=UNITS)]
    return f.fleet([f.node(n, [f.unit(u) for u in UNITS], released) for n in nodes], keys)


def _round_calls(chooser: random.Random) -> list[tuple[str, Any]]:
    """One reclaim of one or two units, and two or three placements on overlapping units."""
    calls: list[tuple[str, Any]] = [
        ("reclaim", {"unitIds": chooser.sample(UNITS, chooser.randint(1, 2))})
    ]
    for number in range(chooser.randint(2, 3)):
        units = chooser.sample(UNITS, chooser.randint(1, 2))
        calls.append(("place", {"id": f"vm-{number}", "kind": "vm", "tier": "spot",
                                "orgId": "org-spotbuyer", "unitIds": units}))  # fmt: skip
    return calls


def _event(node_id: str, call: tuple[str, Any]) -> Call:
    kind, body = call
    if kind == "reclaim":
        return "reclaim", reclaim_event(node_id, "res-1", body, BROKER)
    if kind == "end":
        return "end_workload", end_event(node_id, body, SCHEDULER)
    return "place_workload", place_event(node_id, body, SCHEDULER)


def _race(node_id: str, calls: list[Any], barrier: bool) -> list[Any]:
    """The round's calls at once: from one snapshot, or (no barrier) interleaving as they will."""
    hook = barrier_after_first_read(len(calls)) if barrier else None
    return concurrently([_event(node_id, call) for call in calls], hook)


def _violations(db: Any, sqs: Any, node_id: str, calls: list[Any], answers: list[Any]) -> list[str]:
    """What the stored state says went wrong this round (nothing, if the writes are safe)."""
    items = [i for i in state.whole_table(db) if i["PK"] == f"NODE#{node_id}"]
    released = set(next(i for i in items if i["SK"] == "RES#res-1")["releasedUnitIds"])
    workloads = {i["id"]: i for i in items if i["SK"].startswith("WL#")}
    units = {i["id"]: i for i in items if i["SK"].startswith("UNIT#")}
    found = [
        f"{w['id']} runs spot on {u}, which res-1 no longer releases"
        for w in workloads.values()
        if w["state"] == "running"
        for u in w["unitIds"]
        if u not in released
    ]
    for (kind, body), answer in zip(calls, answers, strict=True):
        if kind == "reclaim" and answer.status == 200:
            found += [f"reclaimed {u} is still released" for u in body["unitIds"] if u in released]
        if kind == "place" and answer.status == 201:
            held = {units[u].get("claimedBy") for u in body["unitIds"]}
            found += [] if held == {f"vm:{body['id']}"} else [f"{body['id']} lost a unit: {held}"]
    queued = {m["workloadId"] for m in state.drain(sqs, state.node_queue_url(db, node_id))}
    terminating = {w for w, item in workloads.items() if item["state"] == "terminating"}
    # Every open termination was queued; a queued one may since have ended with its workload.
    if not terminating <= queued or (queued - terminating) & set(workloads):
        found.append(f"terminations {sorted(terminating)} but queued {sorted(queued)}")
    return found


def test_placements_and_reclaims_on_the_same_units_never_both_land_on_stale_data(
    emulated, load_emulated_fleet
):
    nodes = [f"race-place-{number}" for number in range(ROUNDS)]
    load_emulated_fleet(_fleet(nodes))
    chooser = random.Random(20261129)  # the same rounds every run
    violations: list[str] = []
    for number, node_id in enumerate(nodes):
        calls = _round_calls(chooser)
        answers = _race(node_id, calls, barrier=number % 4 != 3)
        for (kind, _), answer in zip(calls, answers, strict=True):
            FIGURES[f"{kind} attempts"] += 1
            FIGURES[f"{kind} {answer.status} {answer.body.get('code', '')}".strip()] += 1
        violations += [f"{node_id}: {v}" for v in _violations(
            emulated["dynamodb"], emulated["sqs"], node_id, calls, answers)]  # fmt: skip
    FIGURES["violations"] = len(violations)
    print("\nplacement vs reclaim races:", dict(sorted(FIGURES.items())))
    assert violations == []
    assert FIGURES["place 201"] > 0  # some placements won,
    assert FIGURES["place 409 units_unavailable"] > 0  # some lost to a reclaim and were told why
    assert FIGURES["reclaim 200"] == ROUNDS  # and no reclaim was ever lost or refused


def _claims_consistent(db: Any, node_id: str) -> list[str]:
    """Every claim names a live workload holding that unit, and every live workload holds
    each of its units."""
    items = [i for i in state.whole_table(db) if i["PK"] == f"NODE#{node_id}"]
    workloads = {f"vm:{i['id']}": i for i in items if i["SK"].startswith("WL#")}
    claims = {i["id"]: i.get("claimedBy") for i in items if i["SK"].startswith("UNIT#")}
    found = [
        f"{unit_id} claimed by {claim}, which does not hold it"
        for unit_id, claim in claims.items()
        if claim is not None and unit_id not in workloads.get(claim, {}).get("unitIds", [])
    ]
    for claim, workload in workloads.items():
        found += [f"{claim} lost {u}" for u in workload["unitIds"] if claims[u] != claim]
    return found


def test_ends_racing_reclaims_and_placements_leave_no_claim_without_its_workload(
    emulated, load_emulated_fleet
):
    nodes = [f"race-end-{number}" for number in range(ROUNDS // 2)]
    fleet = _fleet(nodes)
    for node in fleet["nodes"]:  # a spot VM on the first unit, which the round fights over
        node["workloads"] = [f.workload("vm-old", [UNITS[0]])]
    load_emulated_fleet(fleet)
    place = {"id": "vm-new", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
             "unitIds": [UNITS[0]]}  # fmt: skip
    calls = [("end", "vm-old"), ("reclaim", {"unitIds": [UNITS[0]]}), ("place", place)]
    outcomes: Counter[str] = Counter()
    violations: list[str] = []
    for number, node_id in enumerate(nodes):
        answers = _race(node_id, calls, barrier=number % 2 == 0)
        outcomes.update(f"{kind} {a.status}" for (kind, _), a in zip(calls, answers, strict=True))
        db = emulated["dynamodb"]
        violations += [f"{node_id}: {v}" for v in _claims_consistent(db, node_id)]
        violations += [f"{node_id}: {v}" for v in _violations(
            db, emulated["sqs"], node_id, calls[1:], answers[1:])]  # fmt: skip
    print("\nend vs reclaim vs placement races:", dict(sorted(outcomes.items())),
          "violations:", len(violations))  # fmt: skip
    assert violations == []
    assert outcomes["end 204"] == len(nodes)  # an end always lands, terminating or not

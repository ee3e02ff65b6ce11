"""Every write says each of its outcomes the same way, because one pipeline says them: a lost
race is a log line and ``<Name>ConflictsRetried`` (re-affirm and ending a workload said
nothing before), a refusal is a log line with its code and whether the key kept it, and
``<Name>Refusals``; a commit's line names the path's ids and the caller."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from reservations.kernel.bodies import RawBody
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.writes import WriteConflict
from reservations.lifecycle.errors import ReservationNotActive
from reservations.nodes.models.partition import ReservationStatus
from tests.support import writes
from tests.support.fakes import FakeTable, ports
from tests.support.ports import AllPorts as Ports
from tests.support.use_cases import BROKER, OPERATOR, OWNER, UNITS, reservation, unit

pytestmark = pytest.mark.disable_socket

FREE = "0000:09:00.0"
OWNER_W = replace(OWNER, permissions=frozenset({"reservation.read", "reservation.write"}))
NODES = replace(OPERATOR, permissions=frozenset({"node.write"}))
SCHEDULER = replace(OPERATOR, permissions=frozenset({"workload.place"}))
NODE_B = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [
    {"id": FREE, "allocClass": "vfio-group", "gpuModelId": "h100", "sellableGpus": 1,
     "sellable": True}]}  # fmt: skip
PLACED = {"id": "vm-new", "kind": "vm", "tier": "on-demand", "orgId": "org-x", "unitIds": [FREE]}


def _reclaim(p: Ports) -> Outcome:
    return writes.reclaim(BROKER, "node-a", "res-1", _body({"unitIds": [UNITS[0]]}), None, p)


def _release(p: Ports) -> Outcome:
    return writes.release(BROKER, "node-a", "res-1", _body({"unitIds": [UNITS[3]]}), None, p)


def _cancel(p: Ports) -> Outcome:
    return writes.cancel(OWNER_W, "node-a", "res-1", RawBody(None), None, p)


def _create(p: Ports) -> Outcome:
    body = _body({"unitIds": [FREE], "allowedOrgIds": ["org-lab"]})
    return writes.create_reservation(OWNER_W, "node-a", body, None, p)


def _place(p: Ports) -> Outcome:
    return writes.place_workload(SCHEDULER, "node-a", _body(PLACED), None, p)


def _end(p: Ports) -> Outcome:
    return writes.end_workload(SCHEDULER, "node-a", "vm-spot", None, p)


def _put_node(p: Ports) -> Outcome:
    return writes.put_node(NODES, "node-b", _body(NODE_B), p)


def _reaffirm(p: Ports) -> Outcome:
    return writes.reaffirm(NODES, "node-a", "res-rev", RawBody(None), None, p)


# Each write, named as its metrics are: its noun in log lines, and a call that commits.
WRITES: dict[str, tuple[str, Callable[[Ports], Outcome]]] = {
    "Reclaim": ("reclaim", _reclaim),
    "Release": ("release", _release),
    "Cancel": ("cancel", _cancel),
    "Create": ("create", _create),
    "Placement": ("placement", _place),
    "WorkloadEnd": ("workload end", _end),
    "NodeWrite": ("node write", _put_node),
    "Reaffirm": ("reaffirm", _reaffirm),
}


def _body(document: dict[str, Any]) -> RawBody:
    return RawBody(json.dumps(document))


class LosingOnce(FakeTable):
    """Its first commit loses to a concurrent writer; the next ones land."""

    lost = False

    def commit(self, write: Any, answer: Any = None) -> None:
        if not self.lost:
            self.lost = True
            raise WriteConflict("TransactionConflict")
        super().commit(write, answer)


@pytest.fixture
def table(store: FakeTable) -> FakeTable:
    """node-a as the logic tests have it, a free unit besides, and a reservation in review."""
    partition = store.nodes["node-a"]
    partition.units[FREE] = unit(FREE)
    review = reservation("res-rev", ReservationStatus.NEEDS_REVIEW, reserved=(UNITS[1],))
    partition.reservations["res-rev"] = review
    return store


def lines(caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [r for r in caplog.records if r.name == "reservations"]


@pytest.mark.parametrize("name", list(WRITES))
def test_every_write_says_and_counts_a_lost_race_then_commits(name, table, clock, emitted, said):
    noun, call = WRITES[name]
    assert call(ports(LosingOnce.sharing(table), clock)).status in (200, 201, 204)
    messages = [r.getMessage() for r in lines(said)]
    assert f"{noun} lost a race; retrying" in messages
    assert emitted[f"{name}ConflictsRetried"]["Value"] == [1.0]


@pytest.mark.parametrize("name", list(WRITES))
def test_every_commit_names_the_paths_ids_and_the_caller(name, table, clock, said):
    _, call = WRITES[name]
    call(ports(table, clock))
    [committed] = [r for r in lines(said) if "lost a race" not in r.getMessage()]
    assert committed.nodeId in ("node-a", "node-b")
    assert (committed.callerOrgId, committed.callerKeyId) != ("", "")


def test_a_refusal_says_its_code_and_that_the_key_kept_it(table, clock, emitted, said):
    table.nodes["node-a"].reservations["res-1"] = reservation(status=ReservationStatus.CANCELLED)
    with pytest.raises(ReservationNotActive):
        writes.reclaim(
            BROKER, "node-a", "res-1", _body({"unitIds": [UNITS[0]]}), "key-1", ports(table, clock)
        )
    [refused] = [r for r in lines(said) if r.getMessage() == "reclaim refused"]
    assert (refused.code, refused.kept) == ("reservation_not_active", True)
    assert emitted["ReclaimRefusals"]["Value"] == [1.0]
    assert len(table.answers) == 1  # kept under the key


# What each commit above says and counts, beyond the path's ids and the caller: the line an
# operator reads (at INFO) and the metrics the dashboards sum.
COMMITS: dict[str, tuple[str, dict[str, Any], dict[str, list[float]]]] = {
    "Reclaim": (
        "reclaim committed",
        {"reservationId": "res-1", "units": [UNITS[0]], "terminated": ["vm-spot"], "skipped": []},
        {
            "Reclaims": [1.0],
            "UnitsReclaimed": [1.0],
            "WorkloadsTerminated": [1.0],
            "WorkloadsSkipped": [0.0],
        },
    ),
    "Release": (
        "release committed",
        {"reservationId": "res-1", "units": [UNITS[3]], "changed": True},
        {"ReservationReleases": [1.0]},
    ),
    "Cancel": (
        "cancel committed",
        {"reservationId": "res-1", "units": [], "changed": True},
        {"ReservationCancels": [1.0]},
    ),
    "Create": ("reservation created", {"status": "active"}, {"ReservationsCreated": [1.0]}),
    "Placement": (
        "workload placed",
        {"workloadId": "vm-new", "state": "running", "tier": "on-demand", "units": [FREE]},
        {"WorkloadsPlaced": [1.0]},
    ),
    "WorkloadEnd": (
        "workload ended",
        {"workloadId": "vm-spot", "tier": "spot", "units": [UNITS[0]]},
        {"WorkloadsEnded": [1.0]},
    ),
    "NodeWrite": (
        "node written",
        {
            "topologyGen": 1,
            "registered": True,
            "unitsPut": 1,
            "unitsRemoved": [],
            "unitsChanged": [],
            "reservationsReviewed": 0,
        },
        {"NodesWritten": [1.0]},
    ),
    "Reaffirm": (
        "reservation re-affirmed",
        {"reservationId": "res-rev", "status": "active", "topologyGen": None},
        {"ReservationsReaffirmed": [1.0]},
    ),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_every_commit_says_what_it_did_and_counts_it(name, table, clock, emitted, said):
    _, call = WRITES[name]
    outcome = call(ports(table, clock))
    message, context, counts = COMMITS[name]
    [committed] = lines(said)
    assert (committed.levelname, committed.getMessage()) == ("INFO", message)
    assert {key: getattr(committed, key, "absent") for key in context} == context
    if name == "Create":
        assert committed.reservationId == json.loads(outcome.body)["id"]
    assert {metric: emitted[metric]["Value"] for metric in emitted} == counts

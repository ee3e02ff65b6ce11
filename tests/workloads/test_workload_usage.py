"""A workload's own use, in-process over moto, each call at a clock the test sets: the
``usedFrom``, ``usedTo`` and ``gpuMs`` of ``workload.ended`` (an end) and
``workload.terminated`` (the node's report), a waiting workload's use from its
``workload.started``, one ended while waiting (nothing), and GET of a workload that left the
node: ``ended`` from its history, with the same visibility, until its retention ends; a live
one's answer unchanged; what each GET reads."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    end_event,
    event_file,
    place_event,
    reclaim_event,
    workload_get_event,
    workloads_event,
)
from devstack.functions import FakeContext, invoke, load_function
from reservations.kernel.aws.codec import to_attributes
from reservations.nodes.models.partition import Tier, Workload, WorkloadKind, WorkloadState
from reservations.nodes.table.records import workload_history_item
from tests.support import state
from tests.support.bodies import unidentified
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

SCHEDULER = "Bearer vl_local_test_scheduler"
OPERATOR = "Bearer vl_local_test_operator"
OWNER = "Bearer vl_local_test_owner"
SPOT_BUYER = "Bearer vl_local_test_spot"
LAB = "Bearer vl_local_test_lab"
STRANGER = "Bearer vl_local_test_stranger"
BROKER = "Bearer vl_local_test_broker"
# ONE sells 1 GPU, TWO sells 2: a workload on both is counted on 3.
ONE, TWO, FREE, LENT, UNDER_SPOT = (
    "0000:04:00.0",
    "0000:05:00.0",
    "0000:06:00.0",
    "0000:07:00.0",
    "0000:08:00.0",
)
KEYS = [
    {"key": "vl_local_test_scheduler", "orgId": "org-platform", "permissions": ["workload.place"]},
    {"key": "vl_local_test_spot", "orgId": "org-spotbuyer", "permissions": f.BOTH},
]
# A moment of the test's own, to the millisecond: a day on, after the fleet's load however
# late the test runs (the fleet's spot VM is placed by it, its use counted from it).
T0 = datetime.now(UTC).replace(microsecond=250_000) + timedelta(days=1)
RUNNING = WorkloadState.RUNNING
RETENTION = timedelta(days=400)  # the stack's HistoryRetentionDays, by default
NAMES = (
    "place_workload",
    "end_workload",
    "get_workload",
    "list_workloads",
    "reclaim",
    "termination_reports",
)


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in NAMES}


@pytest.fixture
def fleet(load_fleet: Any) -> None:
    """res-1 lends ONE and TWO to the spot market; res-2 (the lab's) keeps FREE, lends LENT
    and UNDER_SPOT, where a spot VM runs."""
    units = [
        f.unit(ONE),
        f.unit(TWO, sellableGpus=2),
        f.unit(FREE),
        f.unit(LENT),
        f.unit(UNDER_SPOT, sellableGpus=2),
    ]
    reservations = [
        f.reservation("res-1", [ONE, TWO], releasedUnitIds=[ONE, TWO]),
        f.reservation("res-2", [FREE, LENT, UNDER_SPOT], releasedUnitIds=[LENT, UNDER_SPOT]),
    ]
    workloads = [f.workload("vm-spot", [UNDER_SPOT])]
    node = f.node("node-a", units, reservations, workloads)
    load_fleet(f.fleet([node], extra_keys=KEYS))


def ms(n: int) -> timedelta:
    return timedelta(milliseconds=n)


def text(moment: datetime) -> str:
    """An event's time: to the millisecond, UTC, ``Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def at(monkeypatch: Any, functions: dict[str, ModuleType], name: str, moment: datetime) -> Any:
    """The function, its clock at ``moment``."""
    swap_ports(monkeypatch, functions[name], clock=lambda: moment)
    return functions[name]


def place(functions, monkeypatch, moment: datetime, document: dict[str, Any]) -> Any:
    function = at(monkeypatch, functions, "place_workload", moment)
    return invoke(function, place_event("node-a", document, SCHEDULER))


def spot_vm(workload_id: str = "vm-new", units: tuple[str, ...] = (ONE, TWO)) -> dict[str, Any]:
    return {
        "id": workload_id,
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spotbuyer",
        "unitIds": list(units),
    }


def lab_vm(**fields: Any) -> dict[str, Any]:
    document = {"id": "vm-lab", "kind": "vm", "tier": "reserved", "orgId": "org-lab"}
    return document | {"reservationId": "res-2"} | fields


def end(functions, monkeypatch, moment: datetime, workload_id: str) -> Any:
    function = at(monkeypatch, functions, "end_workload", moment)
    return invoke(function, end_event("node-a", workload_id, SCHEDULER))


def reclaim(functions, monkeypatch, moment: datetime, reservation_id: str, *units: str) -> None:
    function = at(monkeypatch, functions, "reclaim", moment)
    body = {"unitIds": list(units)}
    reclaimed = invoke(function, reclaim_event("node-a", reservation_id, body, BROKER))
    assert reclaimed.status == 200, reclaimed.body


def report(functions, monkeypatch, aws: Any, moment: datetime, workload_id: str) -> None:
    """The node reports the workload stopped, applied by the reports function at ``moment``."""
    termination_id = state.workload(aws, "node-a", workload_id)["terminationId"]
    event = copy.deepcopy(event_file("termination_reports/terminated.json"))
    message = json.loads(event["Records"][0]["body"])
    message |= {"terminationId": termination_id, "nodeId": "node-a", "workloadId": workload_id}
    event["Records"][0]["body"] = json.dumps(message)
    function = at(monkeypatch, functions, "termination_reports", moment)
    assert function.lambda_handler(event, FakeContext()) == {"batchItemFailures": []}


def get(functions, workload_id: str, key: str = OWNER) -> Any:
    return invoke(functions["get_workload"], workload_get_event("node-a", workload_id, key))


def get_at(functions, monkeypatch, moment: datetime, workload_id: str, key: str = OWNER) -> Any:
    function = at(monkeypatch, functions, "get_workload", moment)
    return invoke(function, workload_get_event("node-a", workload_id, key))


def only(aws: Any, event_type: str, workload_id: str) -> dict[str, Any]:
    [event] = [
        e
        for e in state.events(aws, "node-a")
        if e["type"] == event_type and e["subject"] == f"workloads/{workload_id}"
    ]
    return event


def use(event: dict[str, Any]) -> tuple[str, str, int]:
    data = event["data"]
    return data["usedFrom"], data["usedTo"], data["gpuMs"]


# --- workload.ended and workload.terminated ---------------------------------------------------


def test_an_end_states_its_use_from_the_placement_to_the_end_on_every_gpu(
    functions, fleet, aws, monkeypatch
):
    """Placed at T0 on a 1-GPU and a 2-GPU unit, ended 90.5 s later: 3 GPUs for 90,500 ms."""
    assert place(functions, monkeypatch, T0, spot_vm()).status == 201
    assert state.workload(aws, "node-a", "vm-new")["usedFrom"] == text(T0)
    assert end(functions, monkeypatch, T0 + ms(90_500), "vm-new").status == 204
    ended = only(aws, "workload.ended", "vm-new")
    assert use(ended) == (text(T0), text(T0 + ms(90_500)), 90_500 * 3)
    assert ended["data"]["usedTo"] == ended["time"]  # the end's commit
    assert only(aws, "workload.placed", "vm-new")["time"] == ended["data"]["usedFrom"]


def test_any_tier_states_its_use(functions, fleet, aws, monkeypatch):
    """Not only spot: the lab's reserved VM on its own free unit, running at once (201)."""
    assert place(functions, monkeypatch, T0, lab_vm(unitIds=[FREE])).status == 201
    assert end(functions, monkeypatch, T0 + ms(1), "vm-lab").status == 204
    assert use(only(aws, "workload.ended", "vm-lab")) == (text(T0), text(T0 + ms(1)), 1)


def test_the_nodes_report_states_its_use_to_the_reports_commit(functions, fleet, aws, monkeypatch):
    """Placed at T0, reclaimed, reported stopped at T0 + 2 min 0.125 s: to that commit (the
    event's time), not to the node's own report time (``data.time``)."""
    assert place(functions, monkeypatch, T0, spot_vm()).status == 201
    reclaim(functions, monkeypatch, T0 + ms(60_000), "res-1", ONE, TWO)
    stopped = T0 + ms(120_125)
    report(functions, monkeypatch, aws, stopped, "vm-new")
    terminated = only(aws, "workload.terminated", "vm-new")
    assert use(terminated) == (text(T0), text(stopped), 120_125 * 3)
    assert terminated["time"] == text(stopped)
    assert terminated["data"]["time"] != terminated["data"]["usedTo"]  # the node's clock


def test_a_waiting_workloads_use_starts_with_its_workload_started(
    functions, fleet, aws, monkeypatch
):
    """Placed waiting at T0 on the spot VM's 2-GPU unit; the report at T1 hands it over
    (``workload.started`` at T1); ended at T2: from T1, on 2 GPUs."""
    placed = place(functions, monkeypatch, T0, lab_vm(unitIds=[UNDER_SPOT]))
    assert (placed.status, placed.body["state"]) == (202, "waiting")
    assert "usedFrom" not in state.workload(aws, "node-a", "vm-lab")
    t1, t2 = T0 + ms(30_000), T0 + ms(95_007)
    report(functions, monkeypatch, aws, t1, "vm-spot")
    assert only(aws, "workload.started", "vm-lab")["time"] == text(t1)
    assert state.workload(aws, "node-a", "vm-lab")["usedFrom"] == text(t1)
    # The spot VM's own use ends with the same report (from the fleet's load, its placement).
    spot_from, spot_to, spot_ms = use(only(aws, "workload.terminated", "vm-spot"))
    assert spot_to == text(t1)
    assert spot_ms == (state.parse_time(spot_to) - state.parse_time(spot_from)) // ms(1) * 2
    assert state.parse_time(spot_from) < T0  # the load, before T0: spot_ms is more than 0
    assert end(functions, monkeypatch, t2, "vm-lab").status == 204
    assert use(only(aws, "workload.ended", "vm-lab")) == (text(t1), text(t2), 65_007 * 2)


def test_a_workload_ended_while_waiting_used_nothing(functions, fleet, aws, monkeypatch):
    assert place(functions, monkeypatch, T0, lab_vm(unitIds=[UNDER_SPOT])).status == 202
    gone = T0 + ms(45_000)
    assert end(functions, monkeypatch, gone, "vm-lab").status == 204
    assert use(only(aws, "workload.ended", "vm-lab")) == (text(gone), text(gone), 0)


# --- GET of a workload that left the node ------------------------------------------------------


def _ended_vm(functions, monkeypatch) -> datetime:
    """vm-new placed at T0 on ONE and TWO, ended 90.5 s later; the end's moment."""
    assert place(functions, monkeypatch, T0, spot_vm()).status == 201
    ended = T0 + ms(90_500)
    assert end(functions, monkeypatch, ended, "vm-new").status == 204
    return ended


def test_an_ended_workload_is_read_from_its_history_by_whoever_saw_it_live(
    functions, fleet, monkeypatch
):
    ended = _ended_vm(functions, monkeypatch)
    answer = get(functions, "vm-new")
    assert answer.status == 200, answer.body
    body = answer.body
    assert body.pop("createdAt") == text(T0)[:19] + "Z"  # to the second, as ever
    assert body == {
        "id": "vm-new",
        "nodeId": "node-a",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spotbuyer",
        "unitIds": [ONE, TWO],
        "state": "ended",
        "promisedNoticeSeconds": 0,
        "promisedMinRunSeconds": 0,
        "usedFrom": text(T0),
        "usedTo": text(ended),
        "gpuMs": 90_500 * 3,
    }
    for key in (OPERATOR, SPOT_BUYER):  # the operator, and the workload's own org
        assert get(functions, "vm-new", key).body_text == answer.body_text
    # The list stays the node's present: no ended workload in it.
    listed = invoke(functions["list_workloads"], workloads_event("node-a", OWNER))
    assert [w["id"] for w in listed.body["items"]] == ["vm-spot"]


def test_an_ended_workload_anyone_else_may_not_see_is_the_one_404(functions, fleet, monkeypatch):
    _ended_vm(functions, monkeypatch)
    answers = [
        get(functions, "vm-nowhere"),  # unknown
        get(functions, "vm-new", LAB),  # another org
        get(functions, "vm-new", STRANGER),
        get(functions, "vm-new", BROKER),  # manages res-1, whose units it ran on
    ]
    first = answers[0]
    for answer in answers:
        assert answer.status == 404, answer.body
        assert unidentified(answer.body) == {"error": "not found", "code": "not_found"}
        assert answer.headers | {"x-request-id": ""} == first.headers | {"x-request-id": ""}


def test_a_reported_stopped_workload_is_read_ended_too(functions, fleet, aws, monkeypatch):
    reclaim(functions, monkeypatch, T0, "res-2", UNDER_SPOT)
    stopped = T0 + ms(7)
    report(functions, monkeypatch, aws, stopped, "vm-spot")
    answer = get(functions, "vm-spot", SPOT_BUYER)
    assert (answer.status, answer.body["state"], answer.body["usedTo"]) == (
        200,
        "ended",
        text(stopped),
    )
    assert "termination" not in answer.body


def test_past_its_retention_an_ended_workload_is_the_404(functions, fleet, monkeypatch):
    ended = _ended_vm(functions, monkeypatch)
    kept = get_at(functions, monkeypatch, ended + RETENTION - timedelta(minutes=1), "vm-new")
    assert (kept.status, kept.body["state"]) == (200, "ended")
    gone = get_at(functions, monkeypatch, ended + RETENTION + timedelta(seconds=1), "vm-new")
    assert (gone.status, gone.body["code"]) == (404, "not_found")


def test_a_workload_id_placed_again_reads_live_first_then_its_latest_end(
    functions, fleet, monkeypatch
):
    _ended_vm(functions, monkeypatch)
    again = T0 + ms(200_000)
    assert place(functions, monkeypatch, again, spot_vm(units=(ONE,))).status == 201
    live = get(functions, "vm-new")
    assert (live.body["state"], live.body["unitIds"]) == ("running", [ONE])
    assert end(functions, monkeypatch, again + ms(4_000), "vm-new").status == 204
    latest = get(functions, "vm-new").body
    assert (latest["usedFrom"], latest["gpuMs"]) == (text(again), 4_000)


def test_a_live_workloads_answer_carries_no_use(functions, fleet, monkeypatch):
    assert place(functions, monkeypatch, T0, spot_vm()).status == 201
    answer = get(functions, "vm-new")
    assert answer.status == 200
    assert answer.body["state"] == "running"
    assert not {"usedFrom", "usedTo", "gpuMs"} & set(answer.body)  # absent, not null
    assert "null" not in answer.body_text


def test_a_live_hit_reads_as_before_and_a_miss_one_query_more(
    functions, fleet, monkeypatch, dynamodb_calls
):
    _ended_vm(functions, monkeypatch)
    assert get(functions, "vm-spot").status == 200  # the key is cached now
    dynamodb_calls.clear()
    assert get(functions, "vm-spot").status == 200
    assert dynamodb_calls == {"BatchGetItem": 1}
    for workload_id in ("vm-new", "vm-nowhere"):  # ended, and unknown
        dynamodb_calls.clear()
        get(functions, workload_id)
        assert dynamodb_calls == {"BatchGetItem": 1, "Query": 1}
    dynamodb_calls.clear()
    unknown_node = workload_get_event("node-x", "vm-new", OWNER)
    assert invoke(functions["get_workload"], unknown_node).status == 404
    assert dynamodb_calls == {"BatchGetItem": 1}  # no node: nothing more


def test_an_ended_workload_is_one_item_read_whatever_the_nodes_history(
    functions, fleet, aws, monkeypatch, sent_requests
):
    """150 ended lives on the node (30 of vm-new's own, before and after its last end's
    moment in the table's order of other ids): GET reads the node and the workload's key
    (one BatchGetItem of 2 keys), then one item of the history."""
    ended = _ended_vm(functions, monkeypatch)
    for n in range(150):
        workload_id = "vm-new" if n % 5 == 0 else f"vm-{n:03d}"
        moment = ended - timedelta(days=1 + n)
        past = Workload(workload_id, WorkloadKind.VM, Tier.SPOT, "org-x", (ONE,), RUNNING)
        item = workload_history_item("node-a", past, moment, f"wr-{n}", 1)
        aws.put_item(TableName=state.TABLE, Item=to_attributes(item))
    assert get(functions, "vm-new").status == 200  # the key is cached now
    sent_requests.clear()
    answer = get(functions, "vm-new")
    assert (answer.body["orgId"], answer.body["usedTo"]) == ("org-spotbuyer", text(ended))
    assert sent_requests.by_service("dynamodb") == {"BatchGetItem": 1, "Query": 1}
    assert (sent_requests.keys_asked, sent_requests.items_read) == ([2], [(1, 1)])

"""POST /v1/nodes/{nodeId}/workloads and DELETE .../workloads/{workloadId}, in-process over
moto: what is stored, every refusal, the one 404, idempotency, requests per call."""

from __future__ import annotations

from collections import Counter
from types import ModuleType
from typing import Any

import pytest
from botocore.exceptions import ClientError

from devstack import fleet_documents as f
from devstack.api_events import end_event, list_units_event, place_event, reclaim_event
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.retries import MAX_ATTEMPTS
from reservations.nodes.table.keys import ACCESS_SK, HISTORY_PREFIX
from reservations.terminations.table.store import OPEN_TERMINATIONS_INDEX
from tests.support import state
from tests.support.faults import on_call

pytestmark = pytest.mark.moto

SCHEDULER = "Bearer vl_local_test_scheduler"
RELEASED, KEPT, REVIEW, FREE = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"
CLAIMED, TERMINATING, HOST = "0000:08:00.0", "0000:09:00.0", "0000:0a:00.0"
KEYS = [
    {"key": "vl_local_test_scheduler", "orgId": "org-platform", "permissions": ["workload.place"]},
    {"key": "vl_local_test_owner_places", "orgId": "org-acme", "permissions": ["workload.place"]},
]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("place_workload", "end_workload", "list_units", "reclaim")
    return {name: load_function(name) for name in names}


def fleet_document() -> dict[str, Any]:
    units = [f.unit(u) for u in (RELEASED, KEPT, REVIEW, FREE, CLAIMED, TERMINATING)]
    units.append(f.unit(HOST, allocClass="host", sellable=False, notSellableReason="the host's"))
    reservations = [
        f.reservation("res-1", [RELEASED, KEPT, TERMINATING], releasedUnitIds=[RELEASED]),
        f.reservation("res-review", [REVIEW], status="needs-review", releasedUnitIds=[REVIEW]),
    ]
    workloads = [
        f.workload("vm-old", [CLAIMED]),
        f.workload("vm-term", [TERMINATING], state="terminating", terminationId="t-1"),
    ]
    return f.fleet([f.node("node-a", units, reservations, workloads)], extra_keys=KEYS)


@pytest.fixture
def fleet(load_fleet):
    load_fleet(fleet_document())


def body(units=(RELEASED,), workload_id="vm-new", tier="spot", org="org-spotbuyer", **more):
    document = {"id": workload_id, "kind": "vm", "tier": tier, "orgId": org, "unitIds": list(units)}
    return document | more


def place(functions, document, key=SCHEDULER, node="node-a", idempotency_key=None):
    return invoke(functions["place_workload"], place_event(node, document, key, idempotency_key))


def end(functions, workload_id, key=SCHEDULER, node="node-a", idempotency_key=None):
    return invoke(functions["end_workload"], end_event(node, workload_id, key, idempotency_key))


def workload_events(aws: Any) -> list[dict[str, Any]]:
    """The node feed's workload events (the writes' records), in feed order."""
    return [e for e in state.events(aws, "node-a") if e["subject"].startswith("workloads/")]


# --- place ---------------------------------------------------------------------------------


def test_a_placement_is_201_stored_claimed_and_its_event_written(functions, fleet, aws):
    result = place(functions, body(units=(RELEASED.upper(),)))
    assert result.status == 201, result.body
    answer = result.body
    created = answer.pop("createdAt")
    assert answer == {
        "id": "vm-new",
        "nodeId": "node-a",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spotbuyer",
        "unitIds": [RELEASED],
        "state": "running",
        "promisedNoticeSeconds": 0,
        "promisedMinRunSeconds": 0,
    }
    stored = state.workload(aws, "node-a", "vm-new")
    assert (stored["state"], stored["createdAt"], stored["version"]) == ("running", created, 1)
    unit = state.unit(aws, "node-a", RELEASED)
    assert (unit["claimedBy"], unit["version"]) == ("vm:vm-new", 2)
    [event] = workload_events(aws)
    assert (event["type"], event["subject"], event["data"]["actor"]["orgId"]) == (
        "workload.placed",
        "workloads/vm-new",
        "org-platform",
    )
    # Its org may read the node's feed from now on (its workload's events).
    access = state.item(aws, "node-a", ACCESS_SK)
    assert access is not None
    assert answer["orgId"] in access["workloadOrgIds"]
    listed = invoke(
        functions["list_units"], list_units_event("node-a", "Bearer vl_local_test_owner")
    )
    [shown] = [u for u in listed.body if u["id"] == RELEASED]
    assert (shown["state"], shown["claimedBy"]) == ("claimed", "vm:vm-new")


@pytest.mark.parametrize(
    ("document", "status", "code", "words"),
    [
        (body(units=(KEPT,)), 409, "units_unavailable", "has not released"),
        (body(units=(REVIEW,), org="org-lab"), 409, "units_unavailable", "under review"),
        (body(tier="reserved"), 409, "units_unavailable", "tier reserved"),
        (body(units=(CLAIMED,)), 409, "units_unavailable", "claimed by vm:vm-old"),
        (body(workload_id="vm-old", units=(FREE,)), 409, "workload_exists", "vm-old"),
        (body(units=(FREE, HOST)), 422, "units_not_sellable", "not sellable: the host's"),
        (body(units=("0000:0f:00.0",)), 422, "units_not_sellable", "not on this node"),
    ],
)
def test_every_refusal_answers_the_contracts_code_and_writes_nothing(
    functions, fleet, aws, document, status, code, words
):
    before = state.whole_table(aws)
    result = place(functions, document)
    assert (result.status, result.body["code"]) == (status, code)
    assert words in result.body_text
    assert state.whole_table(aws) == before


def test_a_typo_is_400_and_no_key_is_401_with_the_challenge(functions, fleet):
    typo = place(functions, body(orgid="org-x"))
    assert (typo.status, typo.body["code"]) == (400, "invalid_request")
    assert [d["field"] for d in typo.body["details"]] == ["orgid"]
    anonymous = place(functions, body(), key=None)
    assert (anonymous.status, anonymous.headers["www-authenticate"]) == (401, "Bearer")
    assert end(functions, "vm-old", key=None).status == 401


def test_a_reclaim_then_a_spot_placement_on_the_reclaimed_unit_is_refused(functions, fleet):
    reclaimed = invoke(
        functions["reclaim"],
        reclaim_event("node-a", "res-1", {"unitIds": [RELEASED]}, "Bearer vl_local_test_broker"),
    )
    assert reclaimed.status == 200
    assert place(functions, body()).status == 409


# --- end -----------------------------------------------------------------------------------


def test_ending_a_workload_is_204_frees_its_units_and_keeps_its_history(functions, fleet, aws):
    result = end(functions, "vm-old")
    assert (result.status, result.body_text) == (204, "")
    assert state.item(aws, "node-a", "WL#vm-old") is None
    assert "claimedBy" not in state.unit(aws, "node-a", CLAIMED)
    [history] = [i for i in state.whole_table(aws) if i["PK"] == HISTORY_PREFIX + "node-a"]
    assert (history["workloadId"], history["outcome"]) == ("vm-old", "ended")
    assert history["expiresAtEpoch"] > 0
    assert [e["type"] for e in workload_events(aws)] == ["workload.ended"]


def test_ending_a_terminating_workload_takes_its_termination_out_of_the_index(
    functions, fleet, aws
):
    def open_terminations() -> list[str]:
        items = aws.scan(TableName=state.TABLE, IndexName=OPEN_TERMINATIONS_INDEX)["Items"]
        return [state.from_attributes(i)["id"] for i in items]

    assert open_terminations() == ["vm-term"]
    assert end(functions, "vm-term").status == 204
    assert open_terminations() == []
    assert "claimedBy" not in state.unit(aws, "node-a", TERMINATING)


# --- idempotency and conflicts --------------------------------------------------------------


def test_keyed_repeats_are_answered_again_and_act_once(functions, fleet, aws):
    first = place(functions, body(), idempotency_key="p-1")
    again = place(functions, body(), idempotency_key="p-1")
    assert (again.status, again.body_text) == (first.status, first.body_text)
    assert end(functions, "vm-new", idempotency_key="e-1").status == 204
    repeat = end(functions, "vm-new", idempotency_key="e-1")
    assert (repeat.status, repeat.body_text) == (204, "")
    assert end(functions, "vm-new").status == 404
    assert sorted(e["type"] for e in workload_events(aws)) == ["workload.ended", "workload.placed"]


def _conflict() -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "conflict"},
            "CancellationReasons": [{"Code": "TransactionConflict"}],
        },
        "TransactWriteItems",
    )


def test_conflicts_that_never_end_are_409_conflict_and_change_nothing(functions, fleet, aws):
    attempts = []

    def always(_params):
        attempts.append(1)
        raise _conflict()

    before = state.whole_table(aws)
    with on_call(clients.dynamodb(), "TransactWriteItems", before=always):
        placed = place(functions, body())
        ended = end(functions, "vm-old")
    assert [(r.status, r.body["code"]) for r in (placed, ended)] == [(409, "conflict")] * 2
    assert len(attempts) == 2 * MAX_ATTEMPTS
    assert state.whole_table(aws) == before


# --- requests per call ------------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "budget-key"])
def test_place_and_end_are_one_query_and_one_transaction(functions, fleet, sent_requests, key):
    place(functions, body(units=(FREE,), workload_id="vm-warm", tier="on-demand"))  # key cached
    for call in (
        lambda: place(functions, body(), idempotency_key=key and f"place-{key}"),
        lambda: end(functions, "vm-new", idempotency_key=key and f"end-{key}"),
    ):
        sent_requests.clear()
        assert call().status in (201, 204)
        assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]


def test_a_kept_refusal_is_two_requests_and_an_ends_replay_too(functions, fleet, sent_requests):
    place(functions, body(units=(FREE,), workload_id="vm-warm", tier="on-demand"))
    sent_requests.clear()
    assert place(functions, body(units=(KEPT,)), idempotency_key="no").status == 409
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "PutItem")]
    end(functions, "vm-warm", idempotency_key="gone")
    sent_requests.clear()
    assert end(functions, "vm-warm", idempotency_key="gone").status == 204
    assert Counter(op for _, op in sent_requests.sent) == Counter({"Query": 1, "GetItem": 1})


def test_a_unit_with_a_long_history_is_placed_like_any_other(functions, load_fleet):
    """200 ended reservations on a unit (a weekly lab, four years) must not swell the write
    past DynamoDB's 100 actions: it conditions on the governing reservations only."""
    history = [
        f.reservation(f"res-{n:03}", [FREE], startsAt=f.days(-7 * (n + 2)),
                      endsAt=f.days(-7 * (n + 1)))
        for n in range(150)
    ] + [f.reservation(f"res-c{n:02}", [FREE], status="cancelled") for n in range(50)]  # fmt: skip
    load_fleet(f.fleet([f.node("node-h", [f.unit(FREE)], history)], extra_keys=KEYS))
    placed = place(functions, body(units=(FREE,), tier="on-demand"), node="node-h")
    assert placed.status == 201, placed.body

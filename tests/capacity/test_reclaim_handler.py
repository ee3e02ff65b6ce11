"""POST /v1/nodes/{nodeId}/reservations/{id}/reclaim, in-process over moto: every rule."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from devstack import fleet_documents as f
from devstack.api_events import event_file, list_units_event, reclaim_event
from devstack.functions import FakeContext, invoke, load_function
from devstack.sqs_events import sqs_event
from reservations.capacity.rules.events import CapacityEvent
from reservations.kernel import retries
from reservations.kernel.aws import clients
from reservations.kernel.envelope import event_id
from reservations.terminations.models import SpotTermination
from tests.nodes.test_nodes_handler import transactions
from tests.support import state
from tests.support.bodies import comparable
from tests.support.faults import on_call

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"
U1, U2 = "0000:04:00.0", "0000:05:00.0"  # two reservations' units
ALL = ["0000:04:00.0", "0000:05:00.0", "0000:07:00.0", "0000:08:00.0", "0000:09:00.0"]


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("reclaim")


def standard_fleet(**res_overrides: Any) -> dict[str, Any]:
    units = [f.unit(f"0000:0{i}:00.0") for i in range(4, 10)] + [f.unit("0000:0a:00.0")]
    res = f.reservation(
        "res-1",
        ALL,
        releasedUnitIds=["0000:04:00.0", "0000:05:00.0", "0000:07:00.0", "0000:09:00.0"],
        contractRef="C-1",
        reason="lab contract",
        topologyGen=1,
        **res_overrides,
    )
    review = f.reservation(
        "res-review", ["0000:0a:00.0"], status="needs-review", managingOrgIds=["org-reviewer"]
    )
    workloads = [
        f.workload("vm-spot-1", ["0000:04:00.0"]),
        f.workload("vm-span", ["0000:05:00.0", "0000:06:00.0"]),
        f.workload("vm-res", ["0000:07:00.0"], tier="reserved"),
        f.workload("vm-term", ["0000:08:00.0"], state="terminating", terminationId="t-old"),
    ]
    other = f.node(
        "node-b",
        [f.unit("0000:04:00.0")],
        [f.reservation("res-b", ["0000:04:00.0"], releasedUnitIds=["0000:04:00.0"])],
    )
    return f.fleet(
        [f.node("node-a", units, [res, review], workloads), other],
        extra_keys=[
            {
                "key": "vl_local_test_owner_ro",
                "orgId": "org-acme",
                "permissions": ["reservation.read"],
            },
            {
                "key": "vl_local_test_revoked",
                "orgId": "org-broker",
                "permissions": f.BOTH,
                "revoked": True,
            },
        ],
    )


def post(handler, body, key=BROKER, node="node-a", res="res-1", idempotency_key=None):
    return invoke(handler, reclaim_event(node, res, body, key, idempotency_key))


@pytest.fixture
def fleet(load_fleet):
    load_fleet(standard_fleet())


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs")


# --- the real run -------------------------------------------------------------------------


def test_reclaim_returns_the_reservation_after_and_what_was_done(handler, fleet, aws, sqs):
    result = post(handler, {"unitIds": ALL, "reason": "lab needs them"})
    assert result.status == 200, result.body
    body = result.body
    assert body["terminated"] == ["vm-span", "vm-spot-1", "vm-term"]
    assert body["skipped"] == ["vm-res"]
    assert "wouldTerminate" not in body
    assert "wouldSkip" not in body
    assert body["releasedUnitIds"] == []
    assert body["reservedUnitIds"] == sorted(ALL)
    for field, value in {
        "id": "res-1",
        "nodeId": "node-a",
        "status": "active",
        "allowedOrgIds": ["org-lab"],
        "managingOrgIds": ["org-broker"],
        "contractRef": "C-1",
        "reason": "lab contract",
        "topologyGen": 1,
    }.items():
        assert body[field] == value, field
    for field in ("startsAt", "endsAt", "createdAt", "updatedAt"):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", body[field]), field
    assert body["updatedAt"] >= body["createdAt"]

    stored = state.reservation(aws, "node-a", "res-1")
    assert stored["releasedUnitIds"] == []
    assert stored["version"] == 2


def test_spot_workloads_move_to_terminating_and_get_one_message_each(handler, fleet, aws, sqs):
    post(handler, {"unitIds": ALL, "reason": "lab needs them"})
    spot, span = (state.workload(aws, "node-a", w) for w in ("vm-spot-1", "vm-span"))
    for w in (spot, span):
        assert w["state"] == "terminating"
        assert w["terminationId"]
        assert w["terminationId"] != "t-old"
        assert w["openTermination"] == "open"
    assert spot["terminationId"] != span["terminationId"]
    # Not spot: untouched. Already terminating: not re-terminated.
    assert state.workload(aws, "node-a", "vm-res")["state"] == "running"
    assert state.workload(aws, "node-a", "vm-term")["terminationId"] == "t-old"

    messages = state.drain(sqs, state.node_queue_url(aws, "node-a"))
    parsed = {m["workloadId"]: SpotTermination.model_validate(m) for m in messages}
    assert set(parsed) == {"vm-spot-1", "vm-span"}
    assert parsed["vm-span"].unit_ids == ["0000:05:00.0", "0000:06:00.0"]
    assert parsed["vm-span"].termination_id == span["terminationId"]
    for message in parsed.values():
        assert message.version == 1
        assert message.node_id == "node-a"
        assert message.reservation_id == "res-1"
        assert message.reason == "lab needs them"
        assert message.workload_kind.value == "vm"
    # Nothing went to the other node's queue.
    assert state.drain(sqs, state.node_queue_url(aws, "node-b")) == []


def test_its_events_name_the_caller_reason_units_and_outcome(handler, fleet, aws):
    post(handler, {"unitIds": ["0000:04:00.0", "0000:07:00.0"], "reason": "because"})
    [event] = state.reservation_events(aws, "node-a", "res-1")
    assert event["type"] == "reservation.reclaimed"
    data = event["data"]
    assert data["actor"]["orgId"] == "org-broker"
    assert data["actor"]["keyId"].startswith("key-")
    assert "vl_local_test_broker" not in json.dumps(event)
    assert data["reason"] == "because"
    assert data["unitIds"] == ["0000:04:00.0", "0000:07:00.0"]
    assert data["terminated"] == ["vm-spot-1"]
    assert data["skipped"] == ["vm-res"]
    assert data["releasedUnitIds"] == ["0000:05:00.0", "0000:09:00.0"]
    # One termination requested: vm-spot-1 (vm-term, already terminating, is not again).
    [requested] = state.events(aws, "node-a", event_type="workload.termination_requested")
    assert requested["subject"] == "workloads/vm-spot-1"
    assert (requested["data"]["reservationId"], requested["data"]["reason"]) == (
        "res-1",
        "because",
    )
    termination_id = state.workload(aws, "node-a", "vm-spot-1")["terminationId"]
    assert requested["data"]["terminationId"] == termination_id


def test_a_dry_run_writes_no_event(handler, fleet, aws):
    result = post(handler, {"unitIds": ["0000:04:00.0"], "dryRun": True})
    assert result.status == 200
    assert state.events(aws, "node-a") == []


def test_the_largest_reclaim_is_one_transaction_of_100_actions(handler, load_fleet, aws):
    """32 named units, each held by its own running spot workload, with a key: the
    reservation, the topology, 32 units, 32 terminations, the reclaimed event, 32
    termination requests and the key's record."""
    units = [f"0000:{0x40 + i:02x}:00.0" for i in range(32)]
    reservation = f.reservation("res-big", units, releasedUnitIds=units)
    workloads = [f.workload(f"vm-{i}", [unit]) for i, unit in enumerate(units)]
    node = f.node("node-big", [f.unit(u) for u in units], [reservation], workloads)
    load_fleet(f.fleet([node]))
    with transactions() as sizes:
        result = post(handler, {"unitIds": units}, node="node-big", res="res-big",
                      idempotency_key="big-1")  # fmt: skip
    assert result.status == 200, result.body
    assert sizes == [100]
    assert len(result.body["terminated"]) == 32
    written = Counter(e["type"] for e in state.events(aws, "node-big"))
    assert written == {"reservation.reclaimed": 1, "workload.termination_requested": 32}


def test_units_are_matched_case_insensitively(handler, fleet, aws):
    result = post(handler, {"unitIds": ["0000:04:00.0".upper()]})
    assert result.status == 200
    assert result.body["terminated"] == ["vm-spot-1"]


def test_reclaiming_units_that_are_not_released_is_a_harmless_no_op(handler, fleet, aws, sqs):
    post(handler, {"unitIds": ["0000:09:00.0"]})
    before = state.reservation(aws, "node-a", "res-1")
    again = post(handler, {"unitIds": ["0000:09:00.0"]})
    assert again.status == 200
    assert again.body["terminated"] == []
    assert again.body["skipped"] == []
    after = state.reservation(aws, "node-a", "res-1")
    assert after == before  # not even updatedAt moves
    # Someone asked: each call is its event.
    assert len(state.events(aws, "node-a", event_type="reservation.reclaimed")) == 2
    assert state.drain(sqs, state.node_queue_url(aws, "node-a")) == []


def test_a_reclaimed_unit_lists_as_not_released(handler, fleet, aws):
    post(handler, {"unitIds": ["0000:04:00.0"]})
    listed = invoke(load_function("list_units"), list_units_event("node-a", BROKER)).body
    unit = next(u for u in listed if u["id"] == "0000:04:00.0")
    assert unit["released"] is False
    assert unit["claimedBy"] == "vm:vm-spot-1"  # until the node reports it terminated


@pytest.mark.parametrize("who", ["operator", "owner", "broker"])
def test_operator_owner_and_managers_may_reclaim(handler, fleet, who):
    assert (
        post(handler, {"unitIds": ["0000:09:00.0"]}, key=f"Bearer {f.KEYS[who][0]}").status == 200
    )


# --- the dry run --------------------------------------------------------------------------


def test_a_dry_run_changes_nothing_and_reports_what_would_happen(
    handler, fleet, aws, sqs, dynamodb_calls, sqs_calls
):
    post(handler, {"unitIds": ["0000:09:00.0"], "dryRun": True})  # caches the key
    before = state.whole_table(aws)
    dynamodb_calls.clear()
    result = post(handler, {"unitIds": ALL, "dryRun": True, "reason": "just looking"})
    assert result.status == 200
    assert result.body["wouldTerminate"] == ["vm-span", "vm-spot-1", "vm-term"]
    assert result.body["wouldSkip"] == ["vm-res"]
    assert "terminated" not in result.body
    assert "skipped" not in result.body
    assert result.body["releasedUnitIds"] == [
        "0000:04:00.0",
        "0000:05:00.0",
        "0000:07:00.0",
        "0000:09:00.0",
    ]
    assert state.whole_table(aws) == before
    assert state.reservation_events(aws, "node-a", "res-1") == []
    assert state.drain(sqs, state.node_queue_url(aws, "node-a")) == []
    assert dynamodb_calls == Counter({"Query": 1})
    assert sqs_calls == Counter()


# --- 400 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("", "body"),
        ("   ", "body"),
        ("{not json", "body"),
        ("[]", "body"),
        ('"unitIds"', "body"),
        ("null", "body"),
        ({"unitIds": ["0000:04:00.0"], "dryrun": True}, "dryrun"),
        ({"unitIds": ["0000:04:00.0"], "dryRun": "true"}, "dryRun"),
        ({"unitIds": ["0000:04:00.0"], "dryRun": 1}, "dryRun"),
        ({"unitIds": ["0000:04:00.0"], "dryRun": None}, "dryRun"),
        ({"dryRun": True}, "unitIds"),
        ({"unitIds": []}, "unitIds"),
        ({"unitIds": "0000:04:00.0"}, "unitIds"),
        ({"unitIds": [4]}, "unitIds[0]"),
        ({"unitIds": [f"0000:{i:02x}:00.0" for i in range(33)]}, "unitIds"),
        ({"unitIds": ["0000:04:00.0", "0000:04:00.0"]}, "unitIds[1]"),
        ({"unitIds": ["0000:0a:00.0", "0000:0A:00.0"]}, "unitIds[1]"),
        ({"unitIds": ["0000:04:00.0", "04:00.0"]}, "unitIds[1]"),
        ({"unitIds": ["0000:04:00.0"], "reason": "x" * 1001}, "reason"),
        ({"unitIds": ["0000:04:00.0"], "noticeSeconds": 3601}, "noticeSeconds"),
        ({"unitIds": ["0000:04:00.0"], "noticeSeconds": -1}, "noticeSeconds"),
        ({"unitIds": ["0000:04:00.0"], "noticeSeconds": "60"}, "noticeSeconds"),
        ({"unitIds": ["0000:04:00.0"], "noticeSeconds": True}, "noticeSeconds"),
        ({"unitIds": ["0000:04:00.0"], "noticeSeconds": 0.5}, "noticeSeconds"),
        ({"unitIds": ["0000:04:00.0"], "noticeSeconds": None}, "noticeSeconds"),
        ({"unitIds": ["0000:04:00.0"], "reason": 7}, "reason"),
        ('{"unitIds": ["0000:04:00.0"], "dryRun": true, "dryRun": false}', "dryRun"),
    ],
)
def test_bad_bodies_are_400_naming_the_field_and_change_nothing(handler, fleet, aws, body, field):
    before = state.whole_table(aws)
    result = post(handler, body)
    assert result.status == 400
    assert result.body["code"] == "invalid_request"
    assert isinstance(result.body["error"], str)
    assert result.body["error"]
    assert field in [d["field"] for d in result.body["details"]]
    assert state.whole_table(aws) == before


def test_a_reason_of_exactly_1000_characters_is_fine(handler, fleet):
    assert post(handler, {"unitIds": ["0000:09:00.0"], "reason": "x" * 1000}).status == 200


def test_the_typo_event_is_a_400(handler, load_fleet):
    load_fleet(f.demo_fleet())
    result = invoke(handler, event_file("reclaim/typo_field.json"))
    assert (result.status, result.body["code"]) == (400, "invalid_request")
    assert result.body["details"][0]["field"] == "dryrun"


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there"])
def test_a_bad_idempotency_key_is_400(handler, fleet, key):
    result = post(handler, {"unitIds": ["0000:09:00.0"]}, idempotency_key=key)
    assert result.status == 400
    assert result.body["details"][0]["field"] == "Idempotency-Key"


# --- 401 / 404 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", [None, "Basic abc", "Bearer vl_nobody", "Bearer vl_local_test_revoked"]
)
def test_401(handler, fleet, key):
    result = post(handler, {"unitIds": ["0000:04:00.0"]}, key=key)
    assert result.status == 401
    assert result.headers["www-authenticate"] == "Bearer"
    assert result.body["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("node", "res", "key"),
    [
        ("node-zz", "res-1", BROKER),  # unknown node
        ("node-a", "res-zz", BROKER),  # unknown reservation
        ("node-a", "res-b", BROKER),  # the reservation is on another node
        ("node-a", "res-1", "Bearer vl_local_test_stranger"),
        ("node-a", "res-1", "Bearer vl_local_test_lab"),  # audience, even with capacity
        ("node-a", "res-1", "Bearer vl_local_test_owner_ro"),  # owner without reservation.capacity
        ("node-a", "res-review", BROKER),  # broker does not manage this one
        ("node a", "res-1", BROKER),  # malformed ids
        ("node-a", "res 1", BROKER),
        ("node-a", "-res", BROKER),
    ],
)
def test_every_404_is_identical_to_the_list_endpoints(handler, fleet, aws, node, res, key):
    before = state.whole_table(aws)
    reference = invoke(load_function("list_units"), list_units_event("node-zz", BROKER))
    for body in ({"unitIds": ["0000:04:00.0"]}, {"unitIds": []}):  # the 404 before a 400
        result = post(handler, body, key=key, node=node, res=res)
        assert comparable(result) == comparable(reference)
    assert state.whole_table(aws) == before


def test_a_stranger_learns_nothing_about_state(handler, load_fleet):
    load_fleet(standard_fleet(status="cancelled"))
    stranger = post(handler, {"unitIds": ["0000:04:00.0"]}, key="Bearer vl_local_test_stranger")
    assert stranger.status == 404
    not_in = post(handler, {"unitIds": ["0000:0a:00.0"]}, key="Bearer vl_local_test_stranger")
    assert not_in.status == 404


# --- 409 / 422 ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"status": "needs-review"}, "needs-review"),
        ({"status": "cancelled"}, "cancelled"),
        ({"status": "expired"}, "expired"),
        ({"startsAt": f.days(-30), "endsAt": f.days(-1)}, "expired"),
        ({"status": "pending", "startsAt": f.days(2)}, "pending"),
        ({"status": "active", "startsAt": f.days(2)}, "not started"),
    ],
)
def test_409_unless_active_and_in_term(handler, load_fleet, aws, overrides, words):
    load_fleet(standard_fleet(**overrides))
    before = state.whole_table(aws)
    result = post(handler, {"unitIds": ["0000:04:00.0"]})
    assert result.status == 409
    assert result.body["code"] == "reservation_not_active"
    assert words in result.body["error"]
    assert state.whole_table(aws) == before


def test_a_started_pending_reservation_is_active(handler, load_fleet):
    load_fleet(standard_fleet(status="pending", startsAt=f.days(-1)))
    assert post(handler, {"unitIds": ["0000:04:00.0"]}).status == 200


def test_units_outside_the_reservation_are_422_naming_them(handler, fleet, aws):
    before = state.whole_table(aws)
    result = post(handler, {"unitIds": ["0000:04:00.0", "0000:06:00.0", "0000:0f:00.0"]})
    assert result.status == 422
    assert result.body["code"] == "units_not_in_reservation"
    assert "0000:06:00.0" in result.body["error"]
    assert "0000:0f:00.0" in result.body["error"]
    assert "0000:04:00.0" not in result.body["error"]
    assert result.body["details"] == [  # each at its place in the request
        {"field": "unitIds[1]", "problem": "0000:06:00.0 is not reserved"},
        {"field": "unitIds[2]", "problem": "0000:0f:00.0 is not reserved"},
    ]
    assert state.whole_table(aws) == before


# --- conflicts ----------------------------------------------------------------------------


def _conflict() -> ClientError:
    return ClientError(
        {
            "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled"},
            "CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict"}],
        },
        "TransactWriteItems",
    )


def test_a_transaction_conflict_is_retried(handler, fleet, aws):
    failures = [_conflict()]

    def flaky(_params):
        if failures:
            raise failures.pop()

    with on_call(clients.dynamodb(), "TransactWriteItems", before=flaky):
        result = post(handler, {"unitIds": ["0000:04:00.0"]})
    assert result.status == 200
    assert result.body["terminated"] == ["vm-spot-1"]
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1


def test_conflicts_that_never_end_are_409_and_change_nothing(handler, fleet, aws):
    attempts = []

    def always(_params):
        attempts.append(1)
        raise _conflict()

    before = state.whole_table(aws)
    with on_call(clients.dynamodb(), "TransactWriteItems", before=always):
        result = post(handler, {"unitIds": ["0000:04:00.0"]})
    assert result.status == 409
    assert result.body["code"] == "conflict"
    assert len(attempts) == retries.MAX_ATTEMPTS
    assert state.whole_table(aws) == before


def test_a_spot_placement_between_read_and_write_fails_the_first_attempt(
    handler, load_fleet, aws, sqs
):
    load_fleet(standard_fleet())
    reads = []

    def place_after_read(_response):
        if not reads:  # the scheduler places a spot VM on free unit 09 right after our read
            state.place_spot_workload(aws, "node-a", "vm-late", ["0000:09:00.0"])
        reads.append(1)

    with on_call(clients.dynamodb(), "Query", after=place_after_read):
        result = post(handler, {"unitIds": ["0000:09:00.0"]})
    assert result.status == 200
    assert len(reads) == 2  # the first write failed on the unit's version, the retry re-read
    assert result.body["terminated"] == ["vm-late"]
    assert state.workload(aws, "node-a", "vm-late")["state"] == "terminating"
    [message] = state.drain(sqs, state.node_queue_url(aws, "node-a"))
    assert message["workloadId"] == "vm-late"


# --- after the commit ---------------------------------------------------------------------


def test_sqs_down_after_the_commit_still_200_and_the_termination_stays_open(
    handler, fleet, aws, sqs
):
    def unavailable(_params):
        raise ClientError(
            {"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, "SendMessageBatch"
        )

    with on_call(clients.sqs(), "SendMessageBatch", before=unavailable):
        result = post(handler, {"unitIds": ["0000:04:00.0"]})
    assert result.status == 200
    assert result.body["terminated"] == ["vm-spot-1"]
    workload = state.workload(aws, "node-a", "vm-spot-1")
    assert workload["state"] == "terminating"
    open_terminations = aws.query(
        TableName="ReservationsTable",
        IndexName="OpenTerminations",
        KeyConditionExpression="openTermination = :open",
        ExpressionAttributeValues={":open": {"S": "open"}},
    )["Items"]
    assert workload["terminationId"] in {i["terminationId"]["S"] for i in open_terminations}
    assert state.drain(sqs, state.node_queue_url(aws, "node-a")) == []


def test_failed_batch_entries_are_retried(handler, fleet, aws, sqs):
    calls = []
    dropped = []

    def drop_first_entry(params):
        calls.append(len(params["Entries"]))
        if len(calls) == 1:  # SQS takes the others and reports this one failed
            dropped.append(params["Entries"].pop(0)["Id"])

    def report_it_failed(response):
        while dropped:
            failed = {"Id": dropped.pop(), "SenderFault": False, "Code": "InternalError"}
            response.setdefault("Failed", []).append(failed)

    with on_call(clients.sqs(), "SendMessageBatch", drop_first_entry, report_it_failed):
        result = post(handler, {"unitIds": ["0000:04:00.0", "0000:05:00.0"]})
    assert result.status == 200
    assert calls == [2, 1]
    messages = state.drain(sqs, state.node_queue_url(aws, "node-a"))
    assert sorted(m["workloadId"] for m in messages) == ["vm-span", "vm-spot-1"]


@pytest.mark.parametrize(
    ("event_name", "status"),
    [
        ("dry_run", 200),
        ("real_run", 200),
        ("typo_field", 400),
        ("not_in_reservation", 422),
        ("with_notice", 200),
    ],
)
def test_the_sam_local_events_against_the_demo_fleet(handler, load_fleet, event_name, status):
    load_fleet(f.demo_fleet())
    assert invoke(handler, event_file(f"reclaim/{event_name}.json")).status == status


def test_the_transaction_carries_the_reclaim_id_as_its_client_request_token(handler, fleet, aws):
    """So the SDK's retry of a committed-but-unanswered request is idempotent in DynamoDB
    (moto ignores the token, so this pins that it is sent)."""
    tokens = []

    def spy(params):
        tokens.append(params.get("ClientRequestToken"))

    with on_call(clients.dynamodb(), "TransactWriteItems", before=spy):
        post(handler, {"unitIds": ["0000:04:00.0"]})
    [event] = state.reservation_events(aws, "node-a", "res-1")
    reclaimed = CapacityEvent.RECLAIMED
    assert event["id"] == event_id("node-a", tokens[0], reclaimed, "reservations/res-1")


def test_409s_are_counted_as_a_metric(handler, load_fleet, capfd):
    load_fleet(standard_fleet(status="needs-review"))
    capfd.readouterr()
    assert post(handler, {"unitIds": ["0000:04:00.0"]}).status == 409
    emitted = [line for line in capfd.readouterr().out.splitlines() if '"_aws"' in line]
    assert any('"Responses409"' in line for line in emitted)


def test_unset_reservation_fields_are_absent_and_empty_lists_present(handler, load_fleet):
    res = f.reservation("res-1", ["0000:04:00.0"], managingOrgIds=[], releasedUnitIds=[])
    res.pop("endsAt")
    extra = [{"key": "vl_local_test_owner_only", "orgId": "org-acme", "permissions": f.BOTH}]
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")], [res])], extra_keys=extra))
    body = post(handler, {"unitIds": ["0000:04:00.0"]}, key="Bearer vl_local_test_owner_only").body
    for absent in ("endsAt", "contractRef", "reason", "topologyGen", "wouldTerminate"):
        assert absent not in body, absent
    assert body["managingOrgIds"] == []
    assert body["releasedUnitIds"] == []
    assert body["terminated"] == []


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("reclaim", "termination_reports")}


def test_a_spanning_workload_reclaimed_through_two_reservations_at_once_is_terminated_once(
    functions, load_fleet, aws, monkeypatch
):
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(U1), f.unit(U2)],
                    [
                        f.reservation("res-1", [U1], releasedUnitIds=[U1]),
                        f.reservation("res-2", [U2], releasedUnitIds=[U2]),
                    ],
                    [f.workload("vm-span", [U1, U2])],
                )
            ]
        )
    )
    inner: list[Any] = []

    def the_other_reclaim_runs_after_the_read(_response: Any) -> None:
        if not inner:  # res-2's reclaim commits between res-1's read and write
            inner.append(None)
            event = reclaim_event("node-a", "res-2", {"unitIds": [U2]}, BROKER)
            inner[0] = invoke(functions["reclaim"], event)

    with on_call(clients.dynamodb(), "Query", after=the_other_reclaim_runs_after_the_read):
        outer = invoke(
            functions["reclaim"], reclaim_event("node-a", "res-1", {"unitIds": [U1]}, BROKER)
        )

    assert inner[0].status == outer.status == 200
    assert inner[0].body["terminated"] == outer.body["terminated"] == ["vm-span"]
    messages = state.drain(boto3.client("sqs"), state.node_queue_url(aws, "node-a"))
    assert [m["workloadId"] for m in messages] == ["vm-span"]
    workload = state.workload(aws, "node-a", "vm-span")
    assert messages[0]["terminationId"] == workload["terminationId"]


@pytest.mark.parametrize("authorization", [None, "Bearer vl_local_test_unknown_key"])
@pytest.mark.parametrize(
    ("node", "reservation"),
    [
        ("bad id!", "res-1"),
        ("node-a", "-starts-badly"),
        ("n" * 129, "res-1"),
        ("node-a", "r" * 200),
    ],
)
def test_reclaim_answers_401_before_any_404_for_a_malformed_path(
    functions, load_fleet, node, reservation, authorization
):
    load_fleet(f.fleet([f.node("node-a", [f.unit(U1)], [f.reservation("res-1", [U1])])]))
    event = reclaim_event(node, reservation, {"unitIds": [U1]}, authorization)
    result = invoke(functions["reclaim"], event)
    assert (result.status, result.body["code"]) == (401, "unauthorized")
    assert result.headers["www-authenticate"] == "Bearer"


def _report_event(termination_id: str, workload_id: str) -> dict[str, Any]:
    report = {
        "version": 1,
        "type": "termination-report",
        "terminationId": termination_id,
        "nodeId": "node-a",
        "workloadId": workload_id,
        "outcome": "terminated",
        "reportedAt": "2026-11-30T00:00:00Z",
    }
    message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": json.dumps(report)}
    return sqs_event([message], "arn:aws:sqs:us-east-1:123456789012:reports")


def test_a_late_report_leaves_a_unit_another_workload_holds_by_now(functions, load_fleet, aws):
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(U1), f.unit(U2)],
                    [f.reservation("res-1", [U1, U2], releasedUnitIds=[U1, U2])],
                    [f.workload("vm-old", [U1, U2], state="terminating", terminationId="t-old")],
                )
            ]
        )
    )
    # U1 has since moved to another workload (a record the scheduler made meanwhile).
    aws.update_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": f"UNIT#{U1}"}},
        UpdateExpression="SET claimedBy = :other, version = version + :one",
        ExpressionAttributeValues={":other": {"S": "vm:vm-new"}, ":one": {"N": "1"}},
    )
    response = functions["termination_reports"].lambda_handler(
        _report_event("t-old", "vm-old"), FakeContext()
    )
    assert response["batchItemFailures"] == []
    assert state.item(aws, "node-a", "WL#vm-old") is None  # the termination is closed
    assert state.unit(aws, "node-a", U1)["claimedBy"] == "vm:vm-new"  # still the new one's
    assert "claimedBy" not in state.unit(aws, "node-a", U2)  # the old one's is freed


# --- with notice ----------------------------------------------------------------------------


def test_a_notice_is_stored_on_the_item_sent_in_the_message_and_answered(handler, fleet, aws, sqs):
    result = post(handler, {"unitIds": ["0000:04:00.0"], "noticeSeconds": 90})
    assert result.status == 200
    spot = state.workload(aws, "node-a", "vm-spot-1")
    requested = state.parse_time(spot["terminationRequestedAt"])
    deadline = state.parse_time(spot["terminateAt"])
    assert deadline - requested == timedelta(seconds=90)
    assert result.body["terminateAt"] == spot["terminateAt"]
    assert "0000:04:00.0" not in result.body["releasedUnitIds"]
    [message] = state.drain(sqs, state.node_queue_url(aws, "node-a"))
    assert (message["requestedAt"], message["terminateAt"]) == (
        spot["terminationRequestedAt"],
        spot["terminateAt"],
    )
    requested_event = [
        e for e in state.events(aws, "node-a") if e["type"] == "workload.termination_requested"
    ]
    assert [e["data"]["terminateAt"] for e in requested_event] == [spot["terminateAt"]]


def test_an_earlier_deadline_is_written_and_sent_again_a_later_one_is_not(handler, fleet, aws, sqs):
    queue = state.node_queue_url(aws, "node-a")
    post(handler, {"unitIds": ["0000:04:00.0"], "noticeSeconds": 3600})
    [first] = state.drain(sqs, queue)
    before = state.workload(aws, "node-a", "vm-spot-1")
    assert post(handler, {"unitIds": ["0000:04:00.0"], "noticeSeconds": 3600}).status == 200
    assert state.workload(aws, "node-a", "vm-spot-1") == before  # later (or equal): kept
    assert state.drain(sqs, queue) == []
    result = post(handler, {"unitIds": ["0000:04:00.0"], "noticeSeconds": 10})
    moved = state.workload(aws, "node-a", "vm-spot-1")
    assert moved["terminateAt"] == result.body["terminateAt"]
    assert moved["terminateAt"] < before["terminateAt"]
    assert moved["terminationId"] == before["terminationId"]
    assert moved["terminationRequestedAt"] == before["terminationRequestedAt"]
    assert (moved["terminationDeadlineChanges"], moved["version"]) == (1, before["version"] + 1)
    [again] = state.drain(sqs, queue)  # not swallowed by the first one's de-duplication
    assert again["terminationId"] == first["terminationId"]
    assert again["terminateAt"] == moved["terminateAt"]


def test_a_dry_run_with_a_notice_changes_nothing(handler, fleet, aws, sqs):
    before = state.whole_table(aws)
    result = post(handler, {"unitIds": ["0000:04:00.0"], "noticeSeconds": 60, "dryRun": True})
    assert (result.status, "terminateAt" in result.body) == (200, False)
    assert state.whole_table(aws) == before
    assert state.drain(sqs, state.node_queue_url(aws, "node-a")) == []


def test_the_sweepers_record_of_an_old_deadlines_send_does_not_count_for_the_moved_one(
    handler, fleet, aws
):
    from reservations.terminations.table.store import TerminationTable

    post(handler, {"unitIds": ["0000:04:00.0"], "noticeSeconds": 3600})
    table = TerminationTable()
    read = table.read("node-a", "vm-spot-1")
    assert read is not None
    table.record_delivery(read, datetime.now(UTC))  # as read: counted
    assert state.workload(aws, "node-a", "vm-spot-1")["deliveries"] == 1
    stale = table.read("node-a", "vm-spot-1")
    post(handler, {"unitIds": ["0000:04:00.0"], "noticeSeconds": 60})  # moved meanwhile
    table.record_delivery(stale, datetime.now(UTC))
    moved = state.workload(aws, "node-a", "vm-spot-1")
    assert "deliveries" not in moved  # the new deadline still waits for its first delivery
    assert moved["terminationDeadlineChanges"] == 1
    table.record_delivery(table.read("node-a", "vm-spot-1"), datetime.now(UTC))
    assert state.workload(aws, "node-a", "vm-spot-1")["deliveries"] == 1

"""Idempotency-Key on reclaim: the first answer is kept with the effect and replayed.

In-process over moto. The record is written in the reclaim's own transaction, so a repeat,
a concurrent twin or a retry after a crash past the commit gets the committed answer, byte
for byte, and nothing happens twice.
"""

from __future__ import annotations

import hashlib
from types import ModuleType
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from devstack.api_events import reclaim_event
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.http.resolver import key_cache
from tests.capacity.test_reclaim_handler import standard_fleet
from tests.support import state
from tests.support.faults import on_call
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"
ONE = {"unitIds": ["0000:04:00.0"], "reason": "once"}


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("reclaim")


@pytest.fixture
def fleet(load_fleet):
    load_fleet(standard_fleet())


@pytest.fixture
def sqs(aws):
    return boto3.client("sqs")


def post(handler, body, key="k-1", authorization=BROKER, res="res-1", node="node-a"):
    return invoke(handler, reclaim_event(node, res, body, authorization, key))


def records(aws) -> list[dict[str, Any]]:
    return [i for i in state.whole_table(aws) if i["PK"].startswith("IDEMPOTENCY#")]


class Crash(BaseException):
    """The function dies here (a BaseException: no handler of the service catches it)."""


# --- replay -------------------------------------------------------------------------------


def test_a_repeat_gets_the_first_answer_byte_for_byte_and_nothing_happens_twice(
    handler, fleet, aws, sqs
):
    first = post(handler, ONE)
    second = post(handler, ONE)
    assert first.status == second.status == 200
    assert first.body_text == second.body_text
    assert first.body["terminated"] == ["vm-spot-1"]
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1
    assert len(state.drain(sqs, state.node_queue_url(aws, "node-a"))) == 1


def test_a_repeat_after_the_world_moved_on_still_gets_the_first_answer(handler, fleet, aws):
    first = post(handler, ONE)
    # The termination completed and the reservation was released again meanwhile: a re-run
    # would answer differently (nothing to terminate), a replay must not.
    aws.delete_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": "WL#vm-spot-1"}},
    )
    second = post(handler, ONE)
    assert second.body_text == first.body_text
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1


def test_key_order_and_whitespace_do_not_make_another_request(handler, fleet, aws):
    first = post(handler, '{"unitIds": ["0000:04:00.0"], "reason": "once"}')
    second = post(handler, '{ "reason":"once",\n "unitIds":["0000:04:00.0"] }')
    assert second.body_text == first.body_text
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1


def test_the_same_key_with_another_body_or_path_is_422_and_changes_nothing(handler, fleet, aws):
    assert post(handler, ONE).status == 200
    before = state.whole_table(aws)
    other_body = post(handler, {"unitIds": ["0000:05:00.0"]})
    other_path = post(handler, ONE, node="node-b", res="res-b")
    for result in (other_body, other_path):
        assert (result.status, result.body["code"]) == (422, "idempotency_key_reused")
    assert state.whole_table(aws) == before


def test_the_record_is_written_in_the_reclaims_own_transaction(handler, fleet, aws):
    transactions = []

    def spy(params):
        transactions.append(params["TransactItems"])

    with on_call(clients.dynamodb(), "TransactWriteItems", before=spy):
        post(handler, ONE)
    [actions] = transactions
    [record] = [a["Put"] for a in actions if "Put" in a and "requestHash" in a["Put"]["Item"]]
    assert record["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"
    assert "attribute_not_exists(PK)" in record["ConditionExpression"]
    assert len(records(aws)) == 1


# --- what is kept, and what is not --------------------------------------------------------


def test_a_409_not_active_is_kept_and_replayed_even_once_the_reservation_is_active(
    handler, load_fleet, aws
):
    load_fleet(standard_fleet(status="needs-review"))
    first = post(handler, ONE)
    assert (first.status, first.body["code"]) == (409, "reservation_not_active")
    state.set_reservation_status(aws, "node-a", "res-1", "active")
    second = post(handler, ONE)
    assert (second.status, second.body_text) == (409, first.body_text)
    assert state.reservation_events(aws, "node-a", "res-1") == []


def test_a_422_is_kept_and_replayed(handler, fleet, aws):
    body = {"unitIds": ["0000:06:00.0"]}  # not reserved by res-1
    first = post(handler, body)
    assert (first.status, first.body["code"]) == (422, "units_not_in_reservation")
    second = post(handler, body)
    assert (second.status, second.body_text) == (422, first.body_text)
    assert len(records(aws)) == 1


@pytest.mark.parametrize(
    ("body", "authorization", "status"),
    [
        ("{not json", BROKER, 400),
        (ONE, "Bearer vl_local_test_nobody", 401),
        (ONE, "Bearer vl_local_test_stranger", 404),
    ],
)
def test_400_401_and_404_are_not_kept(handler, fleet, aws, body, authorization, status):
    assert post(handler, body, authorization=authorization).status == status
    assert records(aws) == []
    assert post(handler, ONE).status == 200  # the key then acts


def test_a_409_conflict_is_not_kept_and_the_key_then_acts(handler, fleet, aws):
    def conflict(_params):
        raise ClientError(
            {
                "Error": {"Code": "TransactionCanceledException", "Message": "x"},
                "CancellationReasons": [{"Code": "TransactionConflict"}],
            },
            "TransactWriteItems",
        )

    with on_call(clients.dynamodb(), "TransactWriteItems", before=conflict):
        assert post(handler, ONE).body["code"] == "conflict"
    result = post(handler, ONE)
    assert (result.status, result.body["terminated"]) == (200, ["vm-spot-1"])


def test_an_expired_record_is_absent_even_before_ttl_deletes_it(handler, fleet, aws):
    assert post(handler, ONE).status == 200
    [record] = records(aws)
    aws.update_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": record["PK"]}, "SK": {"S": record["SK"]}},
        UpdateExpression="SET expiresAt = :past, expiresAtEpoch = :zero",
        ExpressionAttributeValues={
            ":past": {"S": "2020-01-01T00:00:00Z"},
            ":zero": {"N": "1577836800"},
        },
    )
    again = post(handler, ONE)
    assert again.status == 200
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 2


def test_a_record_is_kept_24_hours(handler, fleet, aws):
    post(handler, ONE)
    [record] = records(aws)
    created = state.parse_time(record["createdAt"])
    assert (state.parse_time(record["expiresAt"]) - created).total_seconds() == 24 * 3600
    assert int(record["expiresAtEpoch"]) == int(state.parse_time(record["expiresAt"]).timestamp())


# --- scope and access ---------------------------------------------------------------------


def test_two_api_keys_never_share_a_record_even_with_the_same_display_id(handler, fleet, aws):
    # Two keys of one org whose audit ids collide (ids are display handles, not identity).
    for secret in ("vl_local_test_twin_one", "vl_local_test_twin_two"):
        state.put_api_key(aws, secret, key_id="key-same", org_id="org-broker")
    first = post(handler, ONE, authorization="Bearer vl_local_test_twin_one")
    other = post(
        handler, {"unitIds": ["0000:05:00.0"]}, authorization="Bearer vl_local_test_twin_two"
    )
    assert first.status == other.status == 200
    assert other.body["terminated"] == ["vm-span"]  # acted: not a 422, not a replay
    assert len(records(aws)) == 2


def test_a_key_that_lost_its_permission_gets_the_404_not_the_stored_answer(handler, fleet, aws):
    assert post(handler, ONE).status == 200
    state.set_api_key_permissions(aws, "vl_local_test_broker", ["reservation.read"])
    key_cache.clear()
    result = post(handler, ONE)
    assert (result.status, result.body["code"]) == (404, "not_found")


def test_a_key_that_lost_visibility_gets_the_404_not_the_stored_answer(handler, fleet, aws):
    assert post(handler, ONE).status == 200
    aws.update_item(
        TableName="ReservationsTable",
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": "RES#res-1"}},
        UpdateExpression="SET managingOrgIds = :none",
        ExpressionAttributeValues={":none": {"L": []}},
    )
    assert post(handler, ONE).status == 404


def test_a_dry_run_ignores_the_header(handler, fleet, aws):
    dry = {"unitIds": ["0000:04:00.0"], "dryRun": True}
    assert post(handler, dry, key="\u00e9 not ascii").status == 200  # not even checked
    assert post(handler, dry, key="k-dry").status == 200
    assert records(aws) == []
    real = post(handler, ONE, key="k-dry")  # the key is still fresh for a real run
    assert real.body["terminated"] == ["vm-spot-1"]


@pytest.mark.parametrize("key", ["", "x" * 256, "tab\there"])
def test_a_malformed_header_is_400_naming_it(handler, fleet, aws, key):
    result = post(handler, ONE, key=key)
    assert (result.status, result.body["details"][0]["field"]) == (400, "Idempotency-Key")
    assert records(aws) == []


# --- concurrency and crashes --------------------------------------------------------------


def test_a_concurrent_twin_gets_the_same_answer_and_there_is_one_effect(handler, fleet, aws, sqs):
    """The twin runs whole between the first one's read and its write."""
    twin = []

    def twin_runs_after_the_read(_response):
        if not twin:
            twin.append(None)
            twin[0] = post(handler, ONE)

    with on_call(clients.dynamodb(), "Query", after=twin_runs_after_the_read):
        first = post(handler, ONE)
    assert first.status == twin[0].status == 200
    assert first.body_text == twin[0].body_text
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1
    assert len(state.drain(sqs, state.node_queue_url(aws, "node-a"))) == 1


def test_a_crash_after_the_commit_then_a_retry_returns_the_committed_outcome(
    handler, fleet, aws, sqs, monkeypatch
):
    def die(*_args, **_kwargs):
        raise Crash

    with monkeypatch.context() as crash:
        swap_ports(crash, handler, send_terminations=die)
        with pytest.raises(Crash):
            post(handler, ONE)
    committed = state.workload(aws, "node-a", "vm-spot-1")
    assert committed["state"] == "terminating"
    [record] = records(aws)

    retry = post(handler, ONE)
    assert retry.status == 200
    assert retry.body_text == record["body"]
    assert retry.body["terminated"] == ["vm-spot-1"]
    assert state.workload(aws, "node-a", "vm-spot-1")["terminationId"] == committed["terminationId"]
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1
    # The retry sends nothing either: the open termination is the sweeper's to deliver.
    assert state.drain(sqs, state.node_queue_url(aws, "node-a")) == []


def test_the_scope_is_a_hash_of_the_api_key_and_the_header(handler, fleet, aws):
    post(handler, ONE, key="k-scope")
    [record] = records(aws)
    key_hash = hashlib.sha256(b"vl_local_test_broker").hexdigest()
    scope = hashlib.sha256(f"{key_hash}\nk-scope".encode()).hexdigest()
    assert record["PK"] == f"IDEMPOTENCY#{scope}"
    assert "vl_local_test_broker" not in str(record)

"""Versions through the real handlers over moto: the ETag header and the ``etag`` field on
GET, the list, create, cancel, re-affirm, release and reclaim; If-None-Match on GET (304, no
body, still one read); If-Match on the writes (412 in the contract's shape with the current
ETag and nothing stored, 400 naming a malformed header, a 404 without ETag, a key that keeps
no 412, a dry run that ignores it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import (
    cancel_event,
    create_event,
    get_event,
    list_event,
    reaffirm_event,
    reclaim_event,
    release_event,
)
from devstack.functions import HttpResult, invoke, load_function
from tests.support import state

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"
LAB = "Bearer vl_local_test_lab"
STRANGER = "Bearer vl_local_test_stranger"
OWNER_W = "Bearer vl_local_test_owner_write"
NODE_OP = "Bearer vl_local_test_node_op"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"]
EXTRA_KEYS = [
    {"key": "vl_local_test_owner_write", "orgId": "org-acme",
     "permissions": ["reservation.read", "reservation.write"]},
    {"key": "vl_local_test_node_op", "orgId": "org-platform",
     "permissions": ["node.write", "reservation.read"]},
]  # fmt: skip


@pytest.fixture
def fleet(load_fleet):
    """node-a: res-1 reserves 04-06 with 04 released, a spot VM on 04; res-2 under review
    holds 07."""
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(u) for u in [*UNITS, "0000:08:00.0"]],
                    [
                        f.reservation("res-1", UNITS[:3], releasedUnitIds=[UNITS[0]]),
                        f.reservation("res-2", [UNITS[3]], status="needs-review"),
                    ],
                    [f.workload("vm-spot", [UNITS[0]])],
                ),
            ],
            EXTRA_KEYS,
        )
    )


def with_headers(event: dict[str, Any], **headers: str) -> dict[str, Any]:
    event["headers"].update({name.replace("_", "-"): value for name, value in headers.items()})
    return event


def get(res: str = "res-1", key: str = BROKER, **headers: str) -> HttpResult:
    event = with_headers(get_event("node-a", res, key), **headers)
    return invoke(load_function("get_reservation"), event)


def tag_of(result: HttpResult) -> str:
    """The answer's ETag, checked against its body's ``etag``."""
    assert result.headers["etag"] == f'"{result.body["etag"]}"'
    return result.headers["etag"]


def version(aws: Any, res: str = "res-1") -> int:
    return int(state.reservation(aws, "node-a", res)["version"])


# --- GET and If-None-Match ------------------------------------------------------------------


def test_get_carries_the_etag_and_the_list_items_the_same_tag(fleet):
    listed = invoke(load_function("list_reservations"), list_event("node-a", BROKER)).body
    tags = {item["id"]: f'"{item["etag"]}"' for item in listed["items"]}
    assert tags == {"res-1": tag_of(get()), "res-2": tag_of(get("res-2"))}
    assert tags["res-1"] != tags["res-2"]  # under review: another status


@pytest.mark.parametrize("held", ["{tag}", "*", "W/{tag}", '"old", {tag}'])
def test_if_none_match_naming_the_current_version_is_304_with_the_etag_and_no_body(fleet, held):
    etag = tag_of(get())
    result = get(if_none_match=held.format(tag=etag))
    assert (result.status, result.body_text, result.headers["etag"]) == (304, "", etag)
    assert "content-type" not in result.headers
    assert result.headers["x-request-id"]


@pytest.mark.parametrize("held", ['"old"', "not-a-tag", ""])
def test_if_none_match_naming_another_version_or_malformed_gets_the_whole_answer(fleet, held):
    result = get(if_none_match=held)
    assert result.status == 200
    tag_of(result)


def test_a_304_is_seen_again_as_200_once_the_reservation_changed(fleet):
    etag = tag_of(get())
    post = invoke(load_function("release"), release_event("node-a", "res-1",
                                                          {"unitIds": [UNITS[1]]}, BROKER))  # fmt: skip
    assert post.status == 200
    result = get(if_none_match=etag)
    assert result.status == 200
    assert tag_of(result) == tag_of(post) != etag


@pytest.mark.parametrize(
    ("res", "key"), [("res-x", BROKER), ("res-1", STRANGER), ("bad id", BROKER)]
)
def test_a_404_carries_no_etag_whatever_the_if_none_match(fleet, res, key):
    result = get(res, key, if_none_match="*")
    assert (result.status, result.body["code"]) == (404, "not_found")
    assert "etag" not in result.headers


# --- the writes: ETag on every answer, If-Match ----------------------------------------------


def release(body: dict[str, Any], key: str = BROKER, res: str = "res-1", idem: str | None = None,
            **headers: str) -> HttpResult:  # fmt: skip
    event = with_headers(release_event("node-a", res, body, key, idem), **headers)
    return invoke(load_function("release"), event)


def reclaim(body: dict[str, Any], **headers: str) -> HttpResult:
    event = with_headers(reclaim_event("node-a", "res-1", body, BROKER), **headers)
    return invoke(load_function("reclaim"), event)


def cancel(res: str = "res-1", **headers: str) -> HttpResult:
    event = with_headers(cancel_event("node-a", res, {"reason": "done"}, OWNER_W), **headers)
    return invoke(load_function("cancel"), event)


def reaffirm(**headers: str) -> HttpResult:
    event = with_headers(reaffirm_event("node-a", "res-2", {}, NODE_OP), **headers)
    return invoke(load_function("reaffirm"), event)


def test_create_answers_201_with_the_etag_a_get_then_gives(fleet):
    body = {"unitIds": ["0000:08:00.0"], "allowedOrgIds": ["org-lab"]}
    made = invoke(load_function("create_reservation"), create_event("node-a", body, OWNER_W))
    assert made.status == 201, made.body_text
    assert tag_of(made) == tag_of(get(made.body["id"], OWNER_W))


def test_the_current_tag_acts_and_the_answer_names_the_new_version(fleet, aws):
    etag = tag_of(get())
    result = release({"unitIds": [UNITS[1]]}, if_match=etag)
    assert result.status == 200, result.body_text
    assert tag_of(result) == tag_of(get()) != etag
    assert version(aws) == 2


def test_a_stale_tag_is_412_in_the_contracts_shape_with_the_current_etag_and_nothing_done(
    fleet, aws
):
    etag = tag_of(get())
    result = release({"unitIds": [UNITS[1]]}, if_match='"stale"')
    assert result.status == 412
    assert result.body["code"] == "precondition_failed"
    assert set(result.body) == {"error", "code", "requestId"}
    assert result.headers["etag"] == etag
    assert version(aws) == 1
    assert state.reservation(aws, "node-a", "res-1")["releasedUnitIds"] == [UNITS[0]]


def test_a_weak_tag_never_matches(fleet):
    etag = tag_of(get())
    assert release({"unitIds": [UNITS[1]]}, if_match=f"W/{etag}").status == 412


def test_a_malformed_if_match_is_400_naming_it(fleet, aws):
    result = release({"unitIds": [UNITS[1]]}, if_match="no quotes")
    assert (result.status, result.body["code"]) == (400, "invalid_request")
    assert [d["field"] for d in result.body["details"]] == ["If-Match"]
    assert version(aws) == 1


def test_a_404_write_carries_no_etag(fleet):
    result = release({"unitIds": [UNITS[1]]}, res="res-x", if_match='"stale"')
    assert (result.status, "etag" in result.headers) == (404, False)


def test_a_412_is_not_kept_by_its_key_and_a_replay_after_the_commit_is_never_a_412(fleet, aws):
    etag = tag_of(get())
    refused = release({"unitIds": [UNITS[1]]}, idem="k-1", if_match='"stale"')
    assert refused.status == 412
    first = release({"unitIds": [UNITS[1]]}, idem="k-1", if_match=etag)
    assert (first.status, "idempotent-replayed" in first.headers) == (200, False)
    again = release({"unitIds": [UNITS[1]]}, idem="k-1", if_match=etag)
    assert (again.status, again.body_text) == (200, first.body_text)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["etag"] == first.headers["etag"]
    assert version(aws) == 2


def test_reclaim_honours_if_match_and_its_dry_run_ignores_it(fleet, aws):
    etag = tag_of(get())
    dry = reclaim({"unitIds": [UNITS[0]], "dryRun": True}, if_match='"stale"')
    assert (dry.status, tag_of(dry)) == (200, etag)
    assert reclaim({"unitIds": [UNITS[0]]}, if_match='"stale"').status == 412
    assert state.workload(aws, "node-a", "vm-spot")["state"] == "running"
    done = reclaim({"unitIds": [UNITS[0]]}, if_match=dry.headers["etag"])
    assert (done.status, done.body["terminated"]) == (200, ["vm-spot"])
    assert tag_of(done) == tag_of(get()) != etag


def test_cancel_honours_if_match(fleet):
    etag = tag_of(get(key=OWNER_W))
    assert cancel(if_match='"stale"').status == 412
    result = cancel(if_match=etag)
    assert (result.status, result.body["status"]) == (200, "cancelled")
    assert tag_of(result) == tag_of(get(key=OWNER_W)) != etag


def test_reaffirm_honours_if_match(fleet):
    etag = tag_of(get("res-2", NODE_OP))
    refused = reaffirm(if_match='"stale"')
    assert (refused.status, refused.headers["etag"]) == (412, etag)
    result = reaffirm(if_match=etag)
    assert (result.status, result.body["status"]) == (200, "active")
    assert tag_of(result) == tag_of(get("res-2", NODE_OP)) != etag


def test_the_412_body_is_json_and_says_nothing_of_the_reservation(fleet):
    result = release({"unitIds": [UNITS[1]]}, if_match='"stale"')
    assert result.headers["content-type"] == "application/json"
    assert "res-1" not in result.body_text
    assert json.loads(result.body_text)["error"]


# --- what they cost ---------------------------------------------------------------------------


def test_a_304_costs_the_one_read_a_get_costs(fleet, sent_requests):
    etag = tag_of(get())  # the key cached
    sent_requests.clear()
    assert get(if_none_match=etag).status == 304
    assert sent_requests.sent == [("dynamodb", "BatchGetItem")]


def test_a_412_is_the_writes_one_read_and_with_a_key_one_getitem_of_its_record_more(
    fleet, sent_requests
):
    release({"unitIds": [UNITS[1]]}, if_match='"stale"')  # the key cached
    sent_requests.clear()
    assert release({"unitIds": [UNITS[1]]}, if_match='"stale"').status == 412
    assert sent_requests.sent == [("dynamodb", "Query")]  # nothing written
    sent_requests.clear()
    assert release({"unitIds": [UNITS[1]]}, idem="k-9", if_match='"stale"').status == 412
    assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "GetItem")]

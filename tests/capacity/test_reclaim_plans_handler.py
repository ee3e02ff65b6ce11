"""Reclaim by ``count`` and a plan's apply through the real handler, over moto: what lands in
the table and on the node's queue, the answers' bytes, the shipped sample events, and that
the signing secret never reaches a log line."""

from __future__ import annotations

from datetime import datetime, timedelta
from types import ModuleType

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import event_file, reclaim_plan_event
from devstack.functions import invoke, load_function
from tests.capacity.test_reclaim_handler import BROKER, post, standard_fleet
from tests.support import state

pytestmark = pytest.mark.moto

RELEASED = ["0000:04:00.0", "0000:05:00.0", "0000:07:00.0", "0000:09:00.0"]
SECRET = "test-only-cursor-signing-key-0123456789"  # tests/conftest.py's


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("reclaim")


@pytest.fixture
def fleet(load_fleet):
    load_fleet(standard_fleet())


def test_a_count_takes_free_then_unstoppable_then_spot_units(handler, fleet, aws):
    """res-1 lends 04 (vm-spot-1), 05 (vm-span, also on 06), 07 (vm-res, reserved), 09
    (free): one count takes 09, then 07, then the spot units."""
    result = post(handler, {"count": 3}, idempotency_key="count-3")
    assert result.status == 200, result.body
    assert result.body["reclaimedUnitIds"] == ["0000:04:00.0", "0000:07:00.0", "0000:09:00.0"]
    assert result.body["terminated"] == ["vm-spot-1"]
    assert result.body["skipped"] == ["vm-res"]
    assert state.reservation(aws, "node-a", "res-1")["releasedUnitIds"] == ["0000:05:00.0"]
    assert state.workload(aws, "node-a", "vm-spot-1")["state"] == "terminating"
    assert state.workload(aws, "node-a", "vm-span")["state"] == "running"
    messages = state.drain(boto3.client("sqs"), state.node_queue_url(aws, "node-a"))
    assert [m["workloadId"] for m in messages] == ["vm-spot-1"]


def test_a_real_count_without_a_key_or_if_match_is_400_naming_both(handler, fleet, aws):
    result = post(handler, {"count": 1})
    assert result.status == 400
    assert result.body["code"] == "invalid_request"
    assert [d["field"] for d in result.body["details"]] == ["Idempotency-Key", "If-Match"]
    assert state.reservation(aws, "node-a", "res-1")["releasedUnitIds"] == RELEASED


def test_too_many_is_409_not_enough_released_and_replayed_by_its_key(handler, fleet, aws):
    first = post(handler, {"count": 5}, idempotency_key="five")
    assert first.status == 409
    assert first.body["code"] == "not_enough_released"
    assert "has 4 released units" in first.body["error"]
    again = post(handler, {"count": 5}, idempotency_key="five")
    assert again.body_text == first.body_text
    assert again.headers.get("idempotent-replayed") == "true"


def test_a_dry_runs_plan_applies_through_the_handler_exactly(handler, fleet, aws, capsys):
    dry = post(handler, {"count": 2, "dryRun": True})
    assert dry.status == 200, dry.body
    plan = dry.body
    assert plan["reclaimedUnitIds"] == ["0000:07:00.0", "0000:09:00.0"]
    assert plan["planExpiresAt"] > plan["updatedAt"]
    assert state.reservation(aws, "node-a", "res-1")["version"] == 1
    applied = invoke(handler, reclaim_plan_event("node-a", "res-1", plan["planId"], BROKER))
    assert applied.status == 200, applied.body
    assert applied.body["reclaimedUnitIds"] == plan["reclaimedUnitIds"]
    assert applied.body["skipped"] == ["vm-res"]
    assert applied.body["terminated"] == []
    stored = state.reservation(aws, "node-a", "res-1")
    assert stored["releasedUnitIds"] == ["0000:04:00.0", "0000:05:00.0"]
    assert stored["version"] == 2
    twice = invoke(handler, reclaim_plan_event("node-a", "res-1", plan["planId"], BROKER))
    assert twice.status == 409
    assert twice.body["code"] == "plan_stale"
    assert SECRET not in capsys.readouterr().out


def test_a_plan_made_with_notice_gives_it_in_the_table_the_answer_and_the_message(
    handler, fleet, aws
):
    """The dry run asks 120 s of notice by count; the apply says nothing of a notice and
    gives the plan's: terminateAt = the apply's commit + 120 s, stored, answered, sent."""
    dry = post(handler, {"count": 3, "noticeSeconds": 120, "dryRun": True})
    assert (dry.status, dry.body["wouldTerminate"]) == (200, ["vm-spot-1"])
    applied = invoke(handler, reclaim_plan_event("node-a", "res-1", dry.body["planId"], BROKER))
    assert applied.status == 200, applied.body
    assert applied.body["terminated"] == ["vm-spot-1"]
    item = state.workload(aws, "node-a", "vm-spot-1")
    requested, deadline = (
        datetime.fromisoformat(item[name]) for name in ("terminationRequestedAt", "terminateAt")
    )
    assert deadline - requested == timedelta(seconds=120)
    assert applied.body["terminateAt"] == item["terminateAt"]
    messages = state.drain(boto3.client("sqs"), state.node_queue_url(aws, "node-a"))
    assert [(m["workloadId"], m["terminateAt"]) for m in messages] == [
        ("vm-spot-1", item["terminateAt"])]  # fmt: skip


def test_a_plan_for_another_reservation_is_400_naming_plan_id(handler, load_fleet, aws):
    fleet = standard_fleet()
    fleet["nodes"][0]["reservations"].append(
        f.reservation("res-2", ["0000:06:00.0"], managingOrgIds=["org-broker"])
    )
    load_fleet(fleet)
    plan = post(handler, {"count": 1, "dryRun": True}).body["planId"]
    result = invoke(handler, reclaim_plan_event("node-a", "res-2", plan, BROKER))
    assert result.status == 400
    assert [d["field"] for d in result.body["details"]] == ["planId"]


@pytest.mark.parametrize(
    ("event_name", "status"),
    [
        ("by_count_dry_run", 200),
        ("by_count", 200),
        ("by_count_without_key", 400),
        ("plan_not_ours", 400),
    ],
)
def test_the_sam_local_samples_for_count_and_plan_against_the_demo_fleet(
    handler, load_fleet, event_name, status
):
    load_fleet(f.demo_fleet())
    result = invoke(handler, event_file(f"reclaim/{event_name}.json"))
    assert result.status == status, result.body
    if status == 200:
        assert len(result.body["reclaimedUnitIds"]) == 2

"""No event leaks across orgs: for every event type and every kind of caller, both feeds
show the event exactly to those the contract's table names, with the key id only to the
operator and the node's owner; another node's events stay with that node's orgs.

In-process over moto: one event of every type on node-a (and on node-b, owned by another
org and naming other orgs), written as their changes will write them and relayed through
the table's stream, read through the two feeds' handlers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devstack import fleet_documents as f
from devstack import template
from devstack.fleets import load_fleet
from devstack.functions import invoke, load_function
from reservations.dal import clients
from reservations.http.resolver import key_cache
from reservations.models.events import EventContext, StoredEvent
from reservations.rules import events as build
from tests.support import event_scenario as s
from tests.support.bodies import unidentified
from tests.support.event_table import StreamRelay, name_workload_orgs, write_events

TYPES = sorted(s.SEES)
U4, U5 = "0000:04:00.0", "0000:05:00.0"


def _fleet() -> dict[str, Any]:
    reservations = [
        f.reservation("res-1", [U4]),
        f.reservation("res-2", [U5], managingOrgIds=["org-reclaimer"], allowedOrgIds=["org-lab2"]),
    ]
    node_a = f.node("node-a", [f.unit(U4), f.unit(U5)], reservations)
    node_b = f.node(
        "node-b",
        [f.unit(U4)],
        [f.reservation("res-b", [U4], managingOrgIds=["org-bbroker"], allowedOrgIds=["org-blab"])],
        owner="org-globex",
    )
    return s.with_feed_permissions(f.fleet([node_a, node_b], extra_keys=s.fleet_keys()))


def _node_b_events(base: datetime) -> list[StoredEvent]:
    """A placement and a reclaim's termination on node-b, for orgs of node-b only."""
    context = EventContext("node-b", "org-globex", "b-1", base, s.OPERATOR_ACTOR)
    workload = s.VM_3
    return [
        build.workload_placed(context, workload),
        build.reservation_reclaimed(
            EventContext("node-b", "org-globex", "b-2", base, s.BROKER_ACTOR),
            s.reservation("res-b", ("org-bbroker",), ("org-blab",)), [U4], None, [], [],
        ),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, Any]]:
    saved = dict(os.environ)
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1", TABLE_NAME="ReservationsTable",
    )  # fmt: skip
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        clients.reset()
        key_cache.clear()
        dynamodb = boto3.client("dynamodb")
        template.create_tables(dynamodb)
        template.create_queues(boto3.client("sqs"))
        template.create_event_buses(boto3.client("events"))
        load_fleet(_fleet(), dynamodb, boto3.client("sqs"))
        name_workload_orgs(dynamodb, "node-a", ["org-spotbuyer"])
        name_workload_orgs(dynamodb, "node-b", ["org-walkin"])
        base = (datetime.now(UTC) - timedelta(hours=1)).replace(microsecond=0)
        node_a = write_events(s.every_type(base))
        node_b = write_events(_node_b_events(base))
        StreamRelay(dynamodb, load_function("event_relay")).run()
        yield {
            "node_a": node_a,
            "node_b": node_b,
            "node_events": load_function("node_events"),
            "org_events": load_function("org_events"),
        }
        clients.reset()
        key_cache.clear()
    os.environ.clear()
    os.environ.update(saved)


def _node_feed(world: dict[str, Any], kind: str, event_type: str) -> Any:
    event = s.node_feed_event("node-a", s.bearer(kind), {"types": event_type, "limit": "100"})
    return invoke(world["node_events"], event)


def _org_feed(world: dict[str, Any], kind: str, event_type: str) -> Any:
    event = s.org_feed_event(s.bearer(kind), {"types": event_type, "limit": "100"})
    return invoke(world["org_events"], event)


def _expected(world: dict[str, Any], kind: str, event_type: str) -> list[dict[str, Any]]:
    return [
        stored.event.envelope(show_key_id=kind in s.SEES_KEY_IDS)
        for stored in world["node_a"]
        if stored.event.type.value == event_type and kind in s.SEES[event_type]
    ]


@pytest.mark.parametrize("kind", list(s.CALLERS))
@pytest.mark.parametrize("event_type", TYPES)
def test_the_node_feed_shows_each_type_to_exactly_whom_the_contract_says(world, event_type, kind):
    result = _node_feed(world, kind, event_type)
    if kind == "stranger":
        assert result.status == 404
        assert unidentified(result.body) == {"error": "not found", "code": "not_found"}
        return
    assert result.status == 200, result.body_text
    assert result.body["items"] == _expected(world, kind, event_type)


@pytest.mark.parametrize("kind", list(s.CALLERS))
@pytest.mark.parametrize("event_type", TYPES)
def test_each_orgs_feed_holds_each_type_only_when_the_contract_says(world, event_type, kind):
    result = _org_feed(world, kind, event_type)
    assert result.status == 200, result.body_text
    # Never another node's event: node-b's events name none of these orgs (the operator
    # sees every node's).
    node_b = [
        stored.event.envelope(True)
        for stored in world["node_b"]
        if kind == "operator" and stored.event.type.value == event_type
    ]
    assert result.body["items"] == sorted(
        _expected(world, kind, event_type) + node_b, key=lambda e: (e["time"], e["id"])
    )


@pytest.mark.parametrize("kind", [k for k in s.CALLERS if k not in s.SEES_KEY_IDS])
def test_no_key_id_reaches_anyone_but_the_operator_and_the_owner(world, kind):
    texts = [_org_feed(world, kind, t).body_text for t in TYPES]
    if kind != "stranger":
        texts += [_node_feed(world, kind, t).body_text for t in TYPES]
    assert not any("keyId" in text for text in texts)
    assert not any("key-broker-1" in text or "key-operator-1" in text for text in texts)

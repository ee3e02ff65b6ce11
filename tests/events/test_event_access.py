"""No event leaks across orgs: for every event type and every kind of caller, both feeds
show the event exactly to those the contract's table names, with the key id only to the
operator and the node's owner; another node's events stay with that node's orgs.

In-process over moto: every event is made by its real write (``tests/support/event_writes``:
each call through its handler, a node's report, the sweeper's flag) on node-a, and on
node-b (owned by another org and naming other orgs); relayed through the table's stream
(the relay also writes the reviews a node update derives); read through the two feeds'
handlers. Who sees what is written out by hand from the contract's table."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from moto import mock_aws

from devstack import fleet_documents as f
from devstack import template
from devstack.api_events import place_event, reclaim_event
from devstack.fleets import load_fleet
from devstack.functions import invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.kernel.http.resolver import key_cache
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import event_scenario as s
from tests.support import event_writes as w
from tests.support import state
from tests.support.bodies import unidentified
from tests.support.event_table import StreamRelay
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

TYPES = sorted(s.SEES)
U4, U5 = "0000:04:00.0", "0000:05:00.0"


def _fleet() -> dict[str, Any]:
    """node-b only (node-a is registered by its PUT), and a key for its broker."""
    node_b = f.node(
        "node-b",
        [f.unit(U4), f.unit(U5)],
        [f.reservation("res-b", [U4], managingOrgIds=["org-bbroker"], allowedOrgIds=["org-blab"])],
        owner="org-globex",
    )
    b_broker = {"key": "vl_local_test_bbroker", "orgId": "org-bbroker",
                "permissions": ["reservation.capacity", "reservation.read"]}  # fmt: skip
    keys = [*s.fleet_keys(), *w.WRITER_KEYS, b_broker]
    return s.with_feed_permissions(f.fleet([node_b], extra_keys=keys))


def _node_b_events(writer: w.Writer) -> None:
    """A reclaim and a placement on node-b, for orgs of node-b only."""
    body = {"unitIds": [U4], "reason": "b's own"}
    writer.call("reclaim", reclaim_event("node-b", "res-b", body, "Bearer vl_local_test_bbroker"))
    placed = {"id": "vm-b", "kind": "vm", "tier": "on-demand", "orgId": "org-walkin",
              "unitIds": [U5]}  # fmt: skip
    writer.call("place_workload", place_event("node-b", placed, w.OPERATOR))


def _relay_everything(relay: StreamRelay) -> None:
    """The stream, until the relay's own writes (derived events) are relayed too."""
    for _ in range(5):
        if relay.run() == 0:
            return
    raise AssertionError("the relay kept finding new events")


@pytest.fixture(scope="module")
def world() -> Iterator[dict[str, Any]]:
    saved = dict(os.environ)
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1", TABLE_NAME="ReservationsTable",
        NODE_QUEUE_PREFIX="events-access-",
    )  # fmt: skip
    os.environ.pop("AWS_ENDPOINT_URL", None)
    with mock_aws():
        clients.reset()
        key_cache.clear()
        dynamodb = boto3.client("dynamodb")
        template.create_tables(dynamodb)
        template.create_queues(boto3.client("sqs"))
        os.environ["NODE_DEAD_LETTER_QUEUE_ARN"] = local_dead_letter_arn(boto3.client("sqs"))
        template.create_event_buses(boto3.client("events"))
        load_fleet(_fleet(), dynamodb, boto3.client("sqs"))
        writer = w.Writer(load_function, dynamodb)
        ids = w.write_every_type(writer)
        _node_b_events(writer)
        _relay_everything(StreamRelay(dynamodb, load_function("event_relay")))
        feeds = {name: load_function(name) for name in ("node_events", "org_events")}
        with pytest.MonkeyPatch.context() as patch:  # read a settle window later
            for module in feeds.values():
                swap_ports(patch, module, clock=lambda: datetime.now(UTC) + SETTLE_WINDOW)
            yield {
                "node_a": state.events(dynamodb, "node-a"),
                "node_b": state.events(dynamodb, "node-b"),
                "res_1": ids["res-1"],
                **feeds,
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


def _as_seen(envelope: dict[str, Any], kind: str) -> dict[str, Any]:
    """The event as this kind of caller is shown it: ``actor.keyId`` for the operator and
    the owner only."""
    actor = envelope["data"].get("actor")
    if actor is None or kind in s.SEES_KEY_IDS:
        return envelope
    return {**envelope, "data": {**envelope["data"], "actor": {"orgId": actor["orgId"]}}}


def _expected(world: dict[str, Any], kind: str, event_type: str) -> list[dict[str, Any]]:
    return [
        _as_seen(event, kind)
        for event in world["node_a"]
        if event["type"] == event_type and kind in w.viewers(event, world["res_1"])
    ]


def _by_id(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events as a follower keeps them, by id (each once: a write answered a settle
    window late leaves a copy further on, ``docs/feeds.md``, which over moto on a loaded
    machine any write may be), in id order (the org feed's record order is the relay's)."""
    return sorted({event["id"]: event for event in events}.values(), key=lambda e: e["id"])


def test_every_type_was_made_by_its_write(world):
    assert {event["type"] for event in world["node_a"]} == set(TYPES)


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
        event for event in world["node_b"] if kind == "operator" and event["type"] == event_type
    ]
    assert _by_id(result.body["items"]) == _by_id(_expected(world, kind, event_type) + node_b)


@pytest.mark.parametrize("kind", [k for k in s.CALLERS if k not in s.SEES_KEY_IDS])
def test_no_key_id_reaches_anyone_but_the_operator_and_the_owner(world, kind):
    texts = [_org_feed(world, kind, t).body_text for t in TYPES]
    if kind != "stranger":
        texts += [_node_feed(world, kind, t).body_text for t in TYPES]
    assert not any("keyId" in text for text in texts)

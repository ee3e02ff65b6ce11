"""Synthetic events, one of every type, on one node, with an org for every kind of caller;
the API Gateway events of the two feeds; and the table-side helpers the event tests share.
The feed and relay tests write these through ``events/table/feeds.py`` (every type at once, at
chosen times); the events of the real writes: ``tests/support/event_writes.py``.

The node ``node-a`` is owned by org-acme (the operator's org is org-platform). Reservation
res-1 is managed by org-broker for the audience org-lab; res-2, the reservation whose
reclaim terminates vm-1, is managed by org-reclaimer for org-lab2. vm-1 and vm-2 run for
org-spotbuyer (vm-3, in no event of ``every_type``, for org-walkin). org-stranger is named by
nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from devstack.api_events import event_file
from reservations.capacity.rules import events as capacity_events
from reservations.kernel.envelope import Actor, EventContext, StoredEvent
from reservations.lifecycle.rules import events as reservations_events
from reservations.lifecycle.rules.clock import ClockKind, ClockMoment
from reservations.nodes.models.partition import (
    Node,
    Reservation,
    ReservationStatus,
    Termination,
    Tier,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.rules import events as nodes_events
from reservations.terminations.rules import events as terminations_events
from reservations.workloads.rules import events as workloads_events

NODE = "node-a"
OWNER_ORG = "org-acme"
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)

# caller kind -> (API key, org)
CALLERS = {
    "operator": ("vl_local_test_operator", "org-platform"),
    "owner": ("vl_local_test_owner", "org-acme"),
    "manager": ("vl_local_test_broker", "org-broker"),
    "audience": ("vl_local_test_lab", "org-lab"),
    "workload_org": ("vl_local_test_spotbuyer", "org-spotbuyer"),
    "reclaimer": ("vl_local_test_reclaimer", "org-reclaimer"),
    "stranger": ("vl_local_test_stranger", "org-stranger"),
}
FEED_PERMISSIONS = ["reservation.read", "events.read"]

# Who sees each type, by caller kind: the contract's table, written out by hand (not from
# the rules it checks).
_ALL_RESERVATION = {"operator", "owner", "manager", "audience"}
_WORKLOAD = {"operator", "owner", "workload_org"}
_TERMINATION = {"operator", "owner", "workload_org", "reclaimer"}
_NODE = {"operator", "owner"}
SEES = {
    "reservation.created": _ALL_RESERVATION,
    "reservation.released": _ALL_RESERVATION,
    "reservation.reclaimed": _ALL_RESERVATION,
    "reservation.cancelled": _ALL_RESERVATION,
    "reservation.reaffirmed": _ALL_RESERVATION,
    "reservation.needs_review": _ALL_RESERVATION,
    "reservation.updated": _ALL_RESERVATION,
    "workload.placed": _WORKLOAD,
    "workload.ended": _WORKLOAD,
    "workload.termination_requested": _TERMINATION,
    "workload.terminated": _TERMINATION,
    "workload.termination_stuck": _NODE,
    "node.registered": _NODE,
    "node.updated": _NODE,
}
# The key ids shown: the operator's and the owner's only.
SEES_KEY_IDS = {"operator", "owner"}


def reservation(
    reservation_id: str, managers: tuple[str, ...], audience: tuple[str, ...]
) -> Reservation:
    return Reservation(
        id=reservation_id,
        node_id=NODE,
        status=ReservationStatus.ACTIVE,
        starts_at=T0 - timedelta(days=1),
        ends_at=T0 + timedelta(days=300),
        created_at=T0,
        updated_at=T0,
        allowed_org_ids=audience,
        managing_org_ids=managers,
        reserved_unit_ids=("0000:04:00.0", "0000:05:00.0"),
        released_unit_ids=("0000:05:00.0",),
        reason="annual lab contract",
        topology_gen=1,
    )


RES_1 = reservation("res-1", ("org-broker",), ("org-lab",))
RES_2 = reservation("res-2", ("org-reclaimer",), ("org-lab2",))
VM_1 = Workload(
    "vm-1", WorkloadKind.VM, Tier.SPOT, "org-spotbuyer", ("0000:06:00.0",), WorkloadState.RUNNING
)
VM_1_TERMINATING = Workload(
    "vm-1", WorkloadKind.VM, Tier.SPOT, "org-spotbuyer", ("0000:06:00.0",),
    WorkloadState.TERMINATING, termination=Termination(id="term-1", reservation_id="res-2", reason="lab needs them", requested_at=T0),
)  # fmt: skip
VM_2 = Workload(
    "vm-2", WorkloadKind.POD, Tier.ON_DEMAND, "org-spotbuyer", ("0000:07:00.0",),
    WorkloadState.RUNNING,
)  # fmt: skip
# Another org's workload: org-spotbuyer must not see its events.
VM_3 = Workload(
    "vm-3", WorkloadKind.VM, Tier.ON_DEMAND, "org-walkin", ("0000:08:00.0",),
    WorkloadState.RUNNING,
)  # fmt: skip
NODE_A = Node(NODE, OWNER_ORG, topology_gen=2)


BROKER_ACTOR = Actor("org-broker", "key-broker-1")


def at(n: int, actor: Actor | None = BROKER_ACTOR, base: datetime = T0) -> EventContext:
    """The n-th change on the node, n seconds and n ms after ``base``."""
    moment = base + timedelta(seconds=n, milliseconds=n)
    return EventContext(NODE, OWNER_ORG, f"change-{n}", moment, actor)


OPERATOR_ACTOR = Actor("org-platform", "key-operator-1")


def context(n: int, actor: Actor | None = BROKER_ACTOR) -> EventContext:
    """The n-th change after T0."""
    return at(n, actor)


def every_type(base: datetime = T0) -> list[StoredEvent]:
    """One event of every type (two placements), in time order, from ``base`` on."""

    def context(n: int, actor: Actor | None = BROKER_ACTOR) -> EventContext:
        return at(n, actor, base)

    builders: list[Callable[[int], StoredEvent]] = [
        lambda n: nodes_events.node_registered(
            context(n, OPERATOR_ACTOR), NODE_A, ["0000:04:00.0"]
        ),
        lambda n: reservations_events.reservation_created(
            context(n, Actor("org-acme", "key-owner-1")), RES_1
        ),
        lambda n: capacity_events.reservation_released(context(n), RES_1, ["0000:05:00.0"], None),
        lambda n: workloads_events.workload_placed(context(n, OPERATOR_ACTOR), VM_1),
        lambda n: capacity_events.reservation_reclaimed(
            context(n), RES_1, ["0000:04:00.0"], "lab needs them", [], ["vm-9"]
        ),
        lambda n: terminations_events.termination_requested(
            context(n, Actor("org-reclaimer", "key-reclaimer-1")),
            VM_1_TERMINATING,
            "term-1",
            RES_2,
            "lab needs them",
        ),
        lambda n: terminations_events.termination_stuck(context(n, None), VM_1_TERMINATING, 5),
        lambda n: terminations_events.workload_terminated(
            context(n, None),
            VM_1_TERMINATING,
            "terminated",
            base + timedelta(seconds=n),
            RES_2.managing_org_ids,
            gpus=1,
        ),
        lambda n: workloads_events.workload_placed(context(n, OPERATOR_ACTOR), VM_2),
        lambda n: workloads_events.workload_ended(
            context(n, OPERATOR_ACTOR), VM_2, ["0000:07:00.0"], gpus=1
        ),
        lambda n: nodes_events.node_updated(
            context(n, OPERATOR_ACTOR), NODE_A, ["0000:08:00.0"], [], ["0000:04:00.0"]
        ),
        lambda n: nodes_events.reservation_needs_review(
            context(n, OPERATOR_ACTOR), RES_1, 2, ["0000:04:00.0"]
        ),
        lambda n: reservations_events.reservation_reaffirmed(
            context(n, OPERATOR_ACTOR), RES_1, "checked the new board"
        ),
        lambda n: reservations_events.reservation_updated(
            context(n, Actor("org-acme", "key-owner-1")),
            RES_1,
            {"contractRef": {"from": None, "to": "C-7"}},
            {},
            "renewed",
        ),
        lambda n: reservations_events.reservation_cancelled(
            context(n, Actor("org-acme", "key-owner-1")), RES_1, "contract ended", "active"
        ),
    ]
    return [make(n) for n, make in enumerate(builders, start=1)]


def clock_types(base: datetime = T0) -> list[StoredEvent]:
    """One event of each of the clock's types, at its moment, by the clock (kept apart from
    :func:`every_type`, whose sequence the feed tests count)."""
    return [
        reservations_events.clock_event(
            "org-acme", RES_1, ClockMoment(base + timedelta(seconds=n), kind), 60
        )
        for n, kind in enumerate(ClockKind, start=1)
    ]


def fleet_keys() -> list[dict[str, Any]]:
    """A key with both feeds' permissions for every kind of caller (on top of the fleet's)."""
    return [
        {"key": key, "orgId": org, "permissions": FEED_PERMISSIONS}
        for kind, (key, org) in CALLERS.items()
        if kind in ("workload_org", "reclaimer")
    ]


def with_feed_permissions(document: dict[str, Any]) -> dict[str, Any]:
    """The fleet with ``events.read`` on every key it has."""
    for api_key in document["apiKeys"]:
        if "events.read" not in api_key["permissions"]:
            api_key["permissions"].append("events.read")
    return document


# --- API Gateway events of the feeds ---------------------------------------------------------


def _with_query(event: dict[str, Any], query: dict[str, str] | None) -> dict[str, Any]:
    event["rawQueryString"] = urlencode(query or {})
    if query:
        event["queryStringParameters"] = dict(query)
    else:
        event.pop("queryStringParameters", None)
    return event


def _with_key(event: dict[str, Any], authorization: str | None) -> dict[str, Any]:
    if authorization is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = authorization
    return event


def node_feed_event(
    node_id: str, authorization: str | None, query: dict[str, str] | None = None
) -> dict[str, Any]:
    """``events/node_events/owner.json`` for another node, key and query."""
    event = copy.deepcopy(event_file("node_events/owner.json"))
    path = f"/v1/nodes/{node_id}/events"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"nodeId": node_id}
    return _with_key(_with_query(event, query), authorization)


def org_feed_event(
    authorization: str | None, query: dict[str, str] | None = None
) -> dict[str, Any]:
    """``events/org_events/spotbuyer.json`` for another key and query."""
    event = copy.deepcopy(event_file("org_events/spotbuyer.json"))
    return _with_key(_with_query(event, query), authorization)


def bearer(kind: str) -> str:
    return f"Bearer {CALLERS[kind][0]}"


@dataclass
class Pages:
    """Every page of a feed, followed to its end."""

    items: list[dict[str, Any]]
    pages: int


def follow(get: Callable[[dict[str, str]], Any], query: dict[str, str] | None = None) -> Pages:
    """Read a feed page by page (``get(query)`` answers one), following nextCursor until a
    page says ``hasMore`` false (it still carries a cursor: where the next events will be)."""
    items: list[dict[str, Any]] = []
    query = dict(query or {})
    for pages in range(1, 1000):
        result = get(query)
        assert result.status == 200, result.body_text
        items.extend(result.body["items"])
        assert result.body["nextCursor"], "every page carries a cursor"
        if not result.body["hasMore"]:
            return Pages(items, pages)
        query["cursor"] = result.body["nextCursor"]
    raise AssertionError("the feed never ended")


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


def in_time_order(events: list[StoredEvent]) -> Iterator[StoredEvent]:
    return iter(sorted(events, key=lambda stored: (stored.event.time, stored.id)))

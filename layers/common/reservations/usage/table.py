"""Usage's reads of the table: a node's feed (``NODEEVT#<node>``, every event, as the node's
changes wrote them) and the records its loads from a fleet file left (``USAGE#<node>``,
sort key ``LOADED#<time>#<part>``: what the fold reads of the node object the file gave,
the fold's ``node.loaded``).

A load writes no event (the contract's), so the loader records what it loaded here instead,
at the load's moment; nothing else writes the partition."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from reservations.kernel.aws import clients
from reservations.kernel.aws.codec import Item, from_attributes, to_attributes
from reservations.kernel.settings import settings
from reservations.kernel.times import format_event_time
from reservations.nodes import node_events_pk
from reservations.usage.rules.facts import NODE_LOADED

USAGE_PREFIX = "USAGE#"
LOADED_PREFIX = "LOADED#"


def usage_pk(node_id: str) -> str:
    return USAGE_PREFIX + node_id


# What the fold reads of a fleet file's node; the rest (names, reasons, refs) is not kept.
_UNIT_FIELDS = ("id", "sellableGpus")
_RESERVATION_FIELDS = ("id", "status", "startsAt", "endsAt", "reservedUnitIds",
                       "releasedUnitIds", "topologyGen")  # fmt: skip
_WORKLOAD_FIELDS = ("id", "tier", "unitIds", "state")
# A load's record is split into parts of at most this many bytes of JSON (an item holds
# 400 KB): a node of 10,000 reservations is a few parts.
PART_BYTES = 300_000


def _kept(objects: list[Mapping[str, Any]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
    return [{name: o[name] for name in fields if name in o} for o in objects]


def loaded_items(node_id: str, node: Mapping[str, Any], loaded_at: datetime) -> list[Item]:
    """The record of a load: what the fold reads of the node object the fleet file gave,
    at the load's moment, in parts (``LOADED#<time>#<part>``; the first holds the units
    and workloads, every part some reservations). A load again leaves another record; the
    fold takes each as the node's whole state."""
    at = format_event_time(loaded_at)
    head = {
        "topologyGen": node.get("topologyGen"),
        "units": _kept(node.get("units", []), _UNIT_FIELDS),
        "workloads": _kept(node.get("workloads", []), _WORKLOAD_FIELDS),
    }
    parts: list[dict[str, Any]] = [{**head, "reservations": []}]
    size = len(json.dumps(head))
    for reservation in _kept(node.get("reservations", []), _RESERVATION_FIELDS):
        grown = len(json.dumps(reservation)) + 2
        if size + grown > PART_BYTES:
            parts.append({"reservations": []})
            size = 0
        parts[-1]["reservations"].append(reservation)
        size += grown
    return [
        {
            "PK": usage_pk(node_id),
            "SK": f"{LOADED_PREFIX}{at}#{index:04d}",
            "part": json.dumps(part),
        }
        for index, part in enumerate(parts)
    ]


def _loads(parts: Iterator[tuple[str, str]], node_id: str) -> list[dict[str, Any]]:
    """Each load's parts, in sort key order, as one ``node.loaded`` fact."""
    loads: dict[str, dict[str, Any]] = {}
    for sort_key, text in parts:
        at = sort_key.removeprefix(LOADED_PREFIX).rpartition("#")[0]
        part = json.loads(text)
        data = loads.setdefault(at, {"reservations": []})
        data["reservations"] += part.pop("reservations", [])
        data.update(part)
    return [
        {"id": f"loaded-{node_id}-{at}", "type": NODE_LOADED, "time": at,
         "subject": f"nodes/{node_id}", "data": data}
        for at, data in loads.items()
    ]  # fmt: skip


def _query(partition: str, attribute: str) -> Iterator[tuple[str, str]]:
    """Every item's sort key and ``attribute`` in the partition, page after page (1 MB
    each)."""
    query: dict[str, Any] = {
        "TableName": settings().table_name,
        "KeyConditionExpression": "PK = :pk",
        "ExpressionAttributeValues": to_attributes({":pk": partition}),
        "ProjectionExpression": "SK, #a",
        "ExpressionAttributeNames": {"#a": attribute},
        "ConsistentRead": True,
    }
    while True:
        page = clients.dynamodb().query(**query)
        for item in page["Items"]:
            plain = from_attributes(item)
            if isinstance(plain.get(attribute), str):
                yield str(plain["SK"]), plain[attribute]
        if "LastEvaluatedKey" not in page:
            return
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class UsageTable:
    """The node's history as the fold reads it; clients are made on first use."""

    def node_events(self, node_id: str) -> list[Mapping[str, Any]]:
        loads = _loads(_query(usage_pk(node_id), "part"), node_id)
        events = [json.loads(event) for _, event in _query(node_events_pk(node_id), "event")]
        return [*loads, *events]

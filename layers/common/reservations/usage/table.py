"""Usage's items in the table: a node's events by time (the node's feed, ``NODEEVT#<node>``,
through the EventsByTime index: each event as its change wrote it, at its ``time``), the
records its loads from a fleet file left (``USAGE#<node>``, sort key
``LOADED#<time>#<part>``: what the fold reads of the node object the file gave, the fold's
``node.loaded``), and the node's checkpoints (``USAGE#<node>``, sort key
``CHECKPOINT#<ms>``: the fold carried to the start of an hour, ``rules/checkpoint.py``).

A load writes no event (the contract's), so the loader records what it loaded here instead,
at the load's moment. The relay's usage outlet (``checkpoints.py``) writes the
checkpoints."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

from reservations.kernel.aws import clients
from reservations.kernel.aws.codec import EXPIRES_AT_EPOCH, Item, from_attributes, to_attributes
from reservations.kernel.aws.event_items import EVENT_TIME
from reservations.kernel.event_log import recorded_at
from reservations.kernel.settings import settings
from reservations.kernel.times import format_event_time
from reservations.nodes import node_events_pk
from reservations.usage.rules.checkpoint import from_text, to_text
from reservations.usage.rules.facts import NODE_LOADED, from_ms, to_ms
from reservations.usage.rules.ledger import Carried
from reservations.usage.rules.revisions import RECORDED_AT

USAGE_PREFIX = "USAGE#"
LOADED_PREFIX = "LOADED#"
CHECKPOINT_PREFIX = "CHECKPOINT#"
EVENTS_BY_TIME_INDEX = "EventsByTime"
# Sorts after every id: "after every event at that millisecond".
_AFTER_EVERY_ID = "~"


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


def _loads(parts: Iterable[tuple[str, str]], node_id: str) -> list[dict[str, Any]]:
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


def _query(
    partition: str,
    attribute: str,
    sort_key: str = "SK",
    between: tuple[str, str] | None = None,
    index: str | None = None,
) -> Iterator[tuple[str, str, str]]:
    """Each item's sort key, ``attribute`` and table sort key (``SK``: on an index, the
    item's own place in its partition) in the partition (its sort key ``between`` the two,
    when given), page after page (1 MB each)."""
    condition = "PK = :pk" + (" AND #s BETWEEN :a AND :b" if between else "")
    values = {":pk": partition, **({":a": between[0], ":b": between[1]} if between else {})}
    query: dict[str, Any] = {
        "TableName": settings().table_name,
        "KeyConditionExpression": condition,
        "ExpressionAttributeValues": to_attributes(values),
        "ProjectionExpression": "#s, #a, SK",
        "ExpressionAttributeNames": {"#a": attribute, "#s": sort_key},
        **({"IndexName": index} if index else {"ConsistentRead": True}),
    }
    while True:
        page = clients.dynamodb().query(**query)
        for item in page["Items"]:
            plain = from_attributes(item)
            if isinstance(plain.get(attribute), str):
                yield str(plain[sort_key]), plain[attribute], str(plain["SK"])
        if "LastEvaluatedKey" not in page:
            return
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _from(prefix: str, since: int | None) -> str:
    """The first sort key of ``prefix`` at or after ``since`` (None: its first: every time
    is written with four digits of year, so sorts at or after "0")."""
    return prefix + ("0" if since is None else format_event_time(from_ms(since)))


def _before(prefix: str, end: int) -> str:
    """The last sort key of ``prefix`` before the millisecond ``end``."""
    return prefix + format_event_time(from_ms(end - 1)) + "#" + _AFTER_EVERY_ID


def checkpoint_key(node_id: str, at: int) -> dict[str, str]:
    return {"PK": usage_pk(node_id), "SK": f"{CHECKPOINT_PREFIX}{at:015d}"}


class UsageTable:
    """A node's history as the fold reads it, and its checkpoints; clients are made on first
    use."""

    def node_history(self, node_id: str, since: int | None, end: int) -> list[Mapping[str, Any]]:
        """The node's events, and a ``node.loaded`` fact for each of its loads, at or
        after ``since`` (from its first, for None) and before ``end`` (ms): one Query of
        the EventsByTime index, one of its loads (a page each 1 MB). Each event carries
        when its copy was recorded in the feed (``recordedAt``, from its position: a write
        that answered late is there again, recorded later)."""
        usage = usage_pk(node_id)
        loaded = _query(
            usage, "part", between=(_from(LOADED_PREFIX, since), _before(LOADED_PREFIX, end))
        )
        events = _query(
            node_events_pk(node_id),
            "event",
            sort_key=EVENT_TIME,
            between=(_from("", since), _before("", end)),
            index=EVENTS_BY_TIME_INDEX,
        )
        return [
            *_loads(((sort_key, part) for sort_key, part, _ in loaded), node_id),
            *({**json.loads(event), RECORDED_AT: to_ms(recorded_at(position))}
              for _, event, position in events),
        ]  # fmt: skip

    def checkpoint(self, node_id: str, at_or_before: int) -> Carried | None:
        """The node's latest checkpoint at or before the instant (ms), if any (one Query
        of one item; one of another shape counts as none)."""
        page = clients.dynamodb().query(
            TableName=settings().table_name,
            KeyConditionExpression="PK = :pk AND SK BETWEEN :a AND :b",
            ExpressionAttributeValues=to_attributes(
                {
                    ":pk": usage_pk(node_id),
                    ":a": CHECKPOINT_PREFIX,
                    ":b": checkpoint_key(node_id, at_or_before)["SK"],
                }
            ),
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = [from_attributes(item) for item in page["Items"]]
        return from_text(str(items[0]["checkpoint"])) if items else None

    def put_checkpoint(self, carried: Carried, retention_days: int) -> None:
        """Keep the fold carried to its instant, as long as the node's events are kept."""
        expires = from_ms(carried.at) + timedelta(days=retention_days)
        clients.dynamodb().put_item(
            TableName=settings().table_name,
            Item=to_attributes(
                {
                    **checkpoint_key(carried.node_id, carried.at),
                    "checkpoint": to_text(carried),
                    EXPIRES_AT_EPOCH: int(expires.timestamp()),
                }
            ),
        )

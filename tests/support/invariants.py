"""The store's invariants, read from the table itself and decided by the contract's words
(never by the product's own rules, so that a rule gone wrong cannot excuse itself).

A node's partition is read into a :class:`Partition`; each check returns the violations it
found, as sentences, empty when the invariant holds."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from moto.dynamodb.responses import DynamoResult

from reservations.kernel.aws.codec import from_attributes, to_attributes
from tests.support.state import TABLE, parse_time

LIVE_WORKLOAD = ("running", "terminating", "waiting")
LIVE_RESERVATION = ("pending", "active", "needs-review")
GOVERNING = ("active", "needs-review")
# Termination bookkeeping the sweeper and the reports write without moving the version
# (no decision conditions on it); every other change of an item moves its version.
BOOKKEEPING = {
    "deliveries",
    "lastDeliveredAt",
    "stuckAt",
    "terminationReportedDeliveries",
    "terminationLastReportedAt",
    "terminationFailedReports",
    "openTermination",
    # The node's count of placements, which a node update conditions on by itself: a
    # placement must not move the node's version, on which creates condition.
    "placements",
}


@dataclass
class Partition:
    """One node's partition as stored: its node item, units, reservations and workloads."""

    pk: str = ""
    node: dict[str, Any] | None = None
    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    reservations: dict[str, dict[str, Any]] = field(default_factory=dict)
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    items: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def live_workloads(self) -> list[dict[str, Any]]:
        return [w for w in self.workloads.values() if w["state"] in LIVE_WORKLOAD]

    def status(self, reservation: dict[str, Any], now: datetime) -> str:
        """The effective status, a review derived from the topology included: a stored
        ``pending`` or ``active`` reservation one of whose units is gone from the node, or
        changed at a later generation than its own (the node item's ``unitsChangedAtGen``,
        which lists the units the node has), is ``needs-review`` until its term ends."""
        status = effective_status(reservation, now)
        if status not in ("pending", "active"):
            return status
        generation = int(reservation.get("topologyGen") or 0)
        changed = (self.node or {}).get("unitsChangedAtGen") or {}
        for unit_id in reservation["reservedUnitIds"]:
            if unit_id not in changed or int(changed[unit_id]) > generation:
                return "needs-review"
        return status


def read_partition(dynamodb: Any, node_id: str) -> Partition:
    """The node's partition and its history (``NODEHIST#``: the ended reservations moved
    out of it), whose reservations are the node's as much as the partition's are."""
    partition = Partition(pk=f"NODE#{node_id}")
    for pk in (f"NODEHIST#{node_id}", partition.pk):  # the live copy wins a move caught half-way
        query: dict[str, Any] = {
            "TableName": TABLE,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": to_attributes({":pk": pk}),
            "ConsistentRead": True,
        }
        while True:
            page = dynamodb.query(**query)
            for attributes in page["Items"]:
                _file(partition, from_attributes(attributes))
            if "LastEvaluatedKey" not in page:
                break
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    return partition


def _file(partition: Partition, item: dict[str, Any]) -> None:
    partition.items[(item["PK"], item["SK"])] = item
    sort_key: str = item["SK"]
    if sort_key == "#NODE":
        partition.node = item
    elif sort_key.startswith("UNIT#"):
        partition.units[item["id"]] = item
    elif sort_key.startswith("RES#"):
        partition.reservations[item["id"]] = item
    elif sort_key.startswith("WL#"):
        partition.workloads[item["id"]] = item


# --- the contract's words ------------------------------------------------------------------


def _time(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def effective_status(reservation: dict[str, Any], now: datetime) -> str:
    """Stored ``pending`` is ``active`` from ``startsAt``; ``active`` and ``needs-review``
    are ``expired`` from ``endsAt``; ``cancelled`` stays."""
    status = str(reservation["status"])
    ends = _time(reservation.get("endsAt"))
    if status == "pending" and now >= parse_time(reservation["startsAt"]):
        status = "active"
    if status in ("active", "needs-review") and ends is not None and now >= ends:
        status = "expired"
    return status


def in_term(reservation: dict[str, Any], now: datetime) -> bool:
    ends = _time(reservation.get("endsAt"))
    return parse_time(reservation["startsAt"]) <= now and (ends is None or now < ends)


def terms_overlap(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Half-open terms; an absent ``endsAt`` overlaps everything after its start."""
    first_end, second_end = _time(first.get("endsAt")), _time(second.get("endsAt"))
    first_start, second_start = parse_time(first["startsAt"]), parse_time(second["startsAt"])
    return (second_end is None or first_start < second_end) and (
        first_end is None or second_start < first_end
    )


def governing(partition: Partition, unit_id: str, now: datetime) -> list[dict[str, Any]]:
    """The reservations governing the unit (list units' definition): holding it, with an
    effective status of ``active`` or ``needs-review``."""
    return sorted(
        (
            r
            for r in partition.reservations.values()
            if unit_id in r["reservedUnitIds"] and partition.status(r, now) in GOVERNING
        ),
        key=lambda r: str(r["id"]),
    )


def withheld_from(
    partition: Partition, unit_id: str, org_id: str, now: datetime
) -> dict[str, Any] | None:
    """The governing reservation that withholds the unit from a spot workload of
    ``org_id``: one under review, or an active one that has not released the unit and
    whose audience does not hold the org. None when the unit is open to it."""
    for reservation in governing(partition, unit_id, now):
        if partition.status(reservation, now) == "needs-review":
            return reservation
        released = unit_id in reservation["releasedUnitIds"]
        if not released and org_id not in reservation["allowedOrgIds"]:
            return reservation
    return None


def spot_on_withheld(partition: Partition, now: datetime) -> set[tuple[str, str, str]]:
    """(workload, unit, reservation) for each running spot workload on a withheld unit."""
    found = set()
    for workload in partition.workloads.values():
        if workload["tier"] != "spot" or workload["state"] != "running":
            continue
        for unit_id in workload["unitIds"]:
            reservation = withheld_from(partition, unit_id, workload["orgId"], now)
            if reservation is not None:
                found.add((str(workload["id"]), str(unit_id), str(reservation["id"])))
    return found


# --- the invariants ------------------------------------------------------------------------


# The stack's default HistoryRetentionDays, and the last moment a stored time can name.
RETENTION = timedelta(days=400)
LAST_EPOCH = int(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp())
NAMED = "namedUntil:"


def named_orgs_hold(
    partition: Partition, now: datetime, unnamed: Mapping[str, int] | None = None
) -> list[str]:
    """The node's list access item names every org that a reservation still readable names,
    at least as long as that one stays readable (else the org would get the list's 404
    while it may see one); and names no org longer than some reservation naming it could
    (its end plus the retention, or its create's time plus the retention), or than a
    PATCH that stopped naming it may keep it (``unnamed``: the change's time plus the
    retention, epoch seconds)."""
    access = partition.items.get((partition.pk, "~ACCESS"))
    if partition.node is None or access is None:
        return []
    stored = {k.removeprefix(NAMED): int(v) for k, v in access.items() if k.startswith(NAMED)}
    problems, bound = [], {org: (unnamed or {}).get(org, 0) for org in stored}
    for reservation in partition.reservations.values():
        until = _named_until(reservation)
        created = int((parse_time(reservation["createdAt"]) + RETENTION).timestamp())
        for org in (*reservation["allowedOrgIds"], *reservation["managingOrgIds"]):
            bound[org] = max(bound.get(org, 0), until, created)
            if until > now.timestamp() and stored.get(org, 0) < until:
                problems.append(
                    f"{org} named until {stored.get(org)}, {reservation['id']} until {until}"
                )
    problems += [f"{org} named until {v}, longer than {bound[org]}"
                 for org, v in stored.items() if v > now.timestamp() and v > bound[org]]  # fmt: skip
    return problems


def _named_until(reservation: dict[str, Any]) -> int:
    """Until when a reservation is readable: its history item says; a live one, at most its
    end plus the retention (no end: year 9999)."""
    if "expiresAtEpoch" in reservation:
        return int(reservation["expiresAtEpoch"])
    if reservation["status"] == "cancelled":
        return int((parse_time(reservation["updatedAt"]) + RETENTION).timestamp())
    if reservation.get("endsAt") is None:
        return LAST_EPOCH
    return int((parse_time(reservation["endsAt"]) + RETENTION).timestamp())


def claims_are_whole(partition: Partition) -> list[str]:
    """No unit claimed twice; every claim names a live workload holding the unit; every
    live workload's units are claimed by it, or (a waiting workload's) held for it while the
    spot workload that claims them stops."""
    problems = []
    holders: dict[str, list[str]] = {}
    for workload in partition.live_workloads():
        claim = f"{workload['kind']}:{workload['id']}"
        for unit_id in workload["unitIds"]:
            unit = partition.units.get(unit_id)
            if workload["state"] == "waiting" and unit and unit.get("heldFor") == claim:
                continue
            holders.setdefault(unit_id, []).append(str(workload["id"]))
            if unit is None or unit.get("claimedBy") != claim:
                claimed = unit and unit.get("claimedBy")
                problems.append(f"live {claim} holds {unit_id}, claimed by {claimed!r}")
    problems += [
        f"{u} held by {len(h)} live workloads: {h}" for u, h in holders.items() if len(h) > 1
    ]
    for unit in partition.units.values():
        claim = unit.get("claimedBy")
        if claim is None:
            continue
        kind, _, workload_id = str(claim).partition(":")
        workload = partition.workloads.get(workload_id)
        if workload is None or workload["state"] not in LIVE_WORKLOAD or workload["kind"] != kind:
            problems.append(f"{unit['id']} claimed by {claim}, which is not a live workload")
        elif unit["id"] not in workload["unitIds"]:
            problems.append(f"{unit['id']} claimed by {claim}, which does not hold it")
    return problems


def no_unit_sold_twice(partition: Partition, now: datetime) -> list[str]:
    """Two live reservations whose terms overlap never share a unit (create's 409)."""
    live = [
        r for r in partition.reservations.values() if partition.status(r, now) in LIVE_RESERVATION
    ]
    live.sort(key=lambda r: str(r["id"]))
    problems = []
    for n, first in enumerate(live):
        for second in live[n + 1 :]:
            shared = set(first["reservedUnitIds"]) & set(second["reservedUnitIds"])
            if shared and terms_overlap(first, second):
                problems.append(
                    f"{first['id']} ({partition.status(first, now)}) and {second['id']} "
                    f"({partition.status(second, now)}) overlap on {sorted(shared)}"
                )
    return problems


def versions_only_grow(
    seen: dict[tuple[str, str], tuple[int, dict[str, Any]]], partitions: Iterable[Partition]
) -> list[str]:
    """Each item's version never goes back, and moves with every change but bookkeeping.
    ``seen`` is updated to the partitions read now (an item that left may come back anew)."""
    problems = []
    for partition in partitions:
        for key in [key for key in seen if key[0] == partition.pk]:
            if key not in partition.items:
                del seen[key]
        for key, item in partition.items.items():
            version = int(item["version"])
            content = {k: v for k, v in item.items() if k not in BOOKKEEPING}
            if key in seen:
                problems += _version_moved(key[1], seen[key], version, content)
            seen[key] = (version, content)
    return problems


def _version_moved(
    sort_key: str, before: tuple[int, dict[str, Any]], version: int, content: dict[str, Any]
) -> list[str]:
    before_version, before_content = before
    if version < before_version:
        return [f"{sort_key}: version went back from {before_version} to {version}"]
    if version == before_version and content != before_content:
        changed = sorted(
            k
            for k in content.keys() | before_content.keys()
            if content.get(k) != before_content.get(k)
        )
        return [f"{sort_key}: {changed} changed at version {version}"]
    return []


@contextmanager
def plain_dynamodb_answers(sample: Callable[[], Any]) -> Iterator[None]:
    """moto's DynamoDB answers written as plain JSON instead of through its shape-driven
    serializer, which spends ~80 ms on a node partition of a few dozen items (a walk of a
    thousand calls would take minutes). The same answers for what the service stores
    (strings, numbers, lists, maps, booleans: no binary): ``sample`` reads some, both ways,
    and must see the same."""
    original = DynamoResult.execute_result

    def plain(self: DynamoResult, context: Any) -> tuple[int, dict[str, str], str]:
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(self.result)

    expected = sample()
    DynamoResult.execute_result = plain  # type: ignore[method-assign]
    try:
        assert sample() == expected, "plain JSON answers differ from moto's own"
        yield
    finally:
        DynamoResult.execute_result = original  # type: ignore[method-assign]

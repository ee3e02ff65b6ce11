"""Each entity as a DynamoDB item and back: the node's partition (node, units,
reservations, workloads, list access), API keys and Idempotency-Key records. Every item in a
node partition carries a ``version`` that each writer bumps, so a conditional write can tell
it saw the latest. Keys come from ``nodes.table.keys``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from reservations.kernel.aws.codec import EXPIRES_AT_EPOCH, Item, epoch
from reservations.kernel.times import (
    LAST_MOMENT,
    format_event_time,
    format_moment,
    format_time,
    parse_time,
)
from reservations.nodes.models.partition import (
    LendingPolicy,
    ListAccess,
    Node,
    NodeSnapshot,
    Reservation,
    ReservationStatus,
    Termination,
    Tier,
    Unit,
    UnitGenerations,
    UnitLending,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.table.keys import (
    CLOCK_AT,
    CLOCK_SHARD,
    LEND_AT,
    LEND_SHARD,
    LIST_PK,
    LIVE,
    LIVE_ENDS,
    NODE_SK,
    OPEN_TERMINATION,
    RESERVATION_PREFIX,
    UNIT_PREFIX,
    WORKLOAD_PREFIX,
    access_key,
    lend_shard,
    node_key,
    node_pk,
    reservation_history_key,
    reservation_key,
    unit_key,
    workload_key,
)

# The node item's map of its units, each to the generation it last changed at (the units
# the node has: a unit item it does not list is left over, and no call sees it), and its
# count of placements (each adds one; a node update conditions on it).
UNITS_CHANGED_AT = "unitsChangedAtGen"
PLACEMENTS = "placements"


def _optional_time(moment: datetime | None) -> str | None:
    return format_time(moment) if moment is not None else None


def _optional_moment(moment: datetime | None) -> str | None:
    """A moment kept to the millisecond (fixed width: it sorts as the time does)."""
    return format_event_time(moment) if moment is not None else None


def node_item(node: Node) -> Item:
    return {
        **node_key(node.id),
        "id": node.id,
        "ownerOrgId": node.owner_org_id,
        "topologyGen": node.topology_gen,
        "queueUrl": node.queue_url,
        "createdAt": _optional_time(node.created_at),
        "updatedAt": _optional_time(node.updated_at),
        UNITS_CHANGED_AT: _unit_generations(node),
        PLACEMENTS: node.placements or None,
        "version": node.version,
    }


def _unit_generations(node: UnitGenerations) -> dict[str, int] | None:
    changed_at = node.unit_changed_at
    return None if changed_at is None else dict(sorted(changed_at.items()))


def unit_item(node_id: str, unit: Unit) -> Item:
    return {
        **unit_key(node_id, unit.id),
        "id": unit.id,
        "allocClass": unit.alloc_class,
        "gpuModelId": unit.gpu_model_id,
        "gpuModelName": unit.gpu_model_name,
        "sellableGpus": unit.sellable_gpus,
        "sellable": unit.sellable,
        "notSellableReason": unit.not_sellable_reason,
        "claimedBy": unit.claimed_by,
        "version": unit.version,
        FREED_AT: _optional_moment(unit.freed_at),
        HELD_FOR: unit.held_for,
    }


# DynamoDB's TTL attribute (epoch seconds): the table deletes the item some time after it.


def reservation_item(reservation: Reservation) -> Item:
    """A reservation in the node's partition: in the node's list index, and with an
    ``endsAt`` in the mover's index of live reservations' ends. Its place in the clock's
    index is the clock's to add (:func:`clock_attributes`, ``lifecycle.table.clock``)."""
    return {
        **reservation_key(reservation.node_id, reservation.id),
        **_reservation_attributes(reservation),
        LIVE_ENDS: LIVE if reservation.ends_at is not None else None,
        **lending_index(reservation),
    }


def clock_fired_item(reservation: Reservation) -> dict[str, str] | None:
    """The moments fired, as stored (kind → the moment, as text); None when none has."""
    return {kind: format_time(at) for kind, at in reservation.clock_fired} or None


def reservation_history_item(reservation: Reservation, retained_until: datetime) -> Item:
    """An ended reservation in the node's history: the same attributes, in the node's
    list index still, out of the mover's, and deleted by the TTL after ``retained_until``."""
    return {
        **reservation_history_key(reservation.node_id, reservation.id),
        **_reservation_attributes(reservation),
        EXPIRES_AT_EPOCH: int(retained_until.timestamp()),
    }


def _reservation_attributes(reservation: Reservation) -> Item:
    return {
        LIST_PK: node_pk(reservation.node_id),
        "id": reservation.id,
        "nodeId": reservation.node_id,
        "status": reservation.status.value,
        "startsAt": format_time(reservation.starts_at),
        "endsAt": _optional_time(reservation.ends_at),
        "allowedOrgIds": list(reservation.allowed_org_ids),
        "managingOrgIds": list(reservation.managing_org_ids),
        "reservedUnitIds": list(reservation.reserved_unit_ids),
        "releasedUnitIds": list(reservation.released_unit_ids),
        "contractRef": reservation.contract_ref,
        "reason": reservation.reason,
        "topologyGen": reservation.topology_gen,
        LENDING: lending_item(reservation.lending),
        LENDING_SINCE: _optional_moment(reservation.lending_since),
        LENDING_UNITS: _lending_units_item(reservation.lending_units),
        "createdAt": format_time(reservation.created_at),
        "updatedAt": format_time(reservation.updated_at),
        "version": reservation.version,
        CLOCK_FIRED: clock_fired_item(reservation),
        WARNING_MINUTES: reservation.warning_minutes,
        ARMED_AT: _optional_time(reservation.armed_at),
    }


# A reservation's lending policy: a map of its fields, absent when it has none; and the rest
# of what lending by the clock keeps (``lending_attributes``); a unit's last freeing.
LENDING = "lending"
LENDING_SINCE = "lendingSince"
LENDING_UNITS = "lendingUnits"
FREED_AT = "freedAt"
# A unit held for a waiting workload (its claim), and what a waiting workload waits on.
HELD_FOR = "heldFor"
WAITING_FOR = "waitingFor"
_POLICY_FIELDS = (
    ("auto", "auto"),
    ("idleSeconds", "idle_seconds"),
    ("keepUnlent", "keep_unlent"),
    ("noticeSeconds", "notice_seconds"),
    ("minRunSeconds", "min_run_seconds"),
    ("relendAfterSeconds", "relend_after_seconds"),
)


def lending_item(policy: LendingPolicy | None) -> Item | None:
    """The policy as stored (None: the attribute is absent)."""
    if policy is None:
        return None
    return {stored: getattr(policy, name) for stored, name in _POLICY_FIELDS}


def lending_attributes(reservation: Reservation) -> Item:
    """Every lending attribute of a reservation in the node's partition, as stored (None:
    absent): its policy, when its idle time last started afresh, its units' lending records,
    and its place in the lending index. A write that changes any of them writes them all."""
    return {
        LENDING: lending_item(reservation.lending),
        LENDING_SINCE: _optional_moment(reservation.lending_since),
        LENDING_UNITS: _lending_units_item(reservation.lending_units),
        **lending_index(reservation),
    }


def lending_index(reservation: Reservation) -> Item:
    """Its place in the lending index: its shard and ``lendAt`` (both None when it has none)."""
    if reservation.lend_at is None:
        return {LEND_SHARD: None, LEND_AT: None}
    return {LEND_SHARD: lend_shard(reservation.id), LEND_AT: format_event_time(reservation.lend_at)}


# A unit's lending record, as stored: each field by name, absent when unset.
_UNIT_LENDING_TIMES = (("joinedAt", "joined_at"), ("lentAt", "lent_at"), ("relendAt", "relend_at"))


def _lending_units_item(units: tuple[tuple[str, UnitLending], ...]) -> Item | None:
    stored: Item = {}
    for unit_id, record in units:
        fields: Item = {
            key: format_event_time(getattr(record, name))
            for key, name in _UNIT_LENDING_TIMES
            if getattr(record, name) is not None
        }
        if record.take_backs:
            fields["takeBacks"] = record.take_backs
        stored[unit_id] = fields
    return stored or None


def _lending_units(stored: Item | None) -> tuple[tuple[str, UnitLending], ...]:
    return tuple(
        (
            unit_id,
            UnitLending(
                **{name: _parse_optional(fields.get(key)) for key, name in _UNIT_LENDING_TIMES},
                take_backs=int(fields.get("takeBacks") or 0),
            ),
        )
        for unit_id, fields in sorted((stored or {}).items())
    )


def _lending(stored: Item | None) -> LendingPolicy | None:
    if not stored:
        return None
    return LendingPolicy(
        auto=bool(stored["auto"]),
        **{name: int(stored[key]) for key, name in _POLICY_FIELDS[1:] if key in stored},
    )


# The reservation's clock attributes besides its place in the index (``lifecycle.rules.clock``).
CLOCK_FIRED = "clockFired"
WARNING_MINUTES = "expiryWarningMinutes"
ARMED_AT = "clockArmedAt"


def clock_attributes(reservation: Reservation, place: tuple[str, str] | None) -> Item:
    """The clock's attributes of a reservation in the node's partition that its moments
    move, as stored (None: absent): the moments fired, and its place in the clock's index,
    ``place``: its shard and its next armed moment's key, which the clock computes
    (``lifecycle.rules.clock``; None when nothing is armed). A write that changes any of
    them writes them all."""
    shard, at = place if place is not None else (None, None)
    return {CLOCK_FIRED: clock_fired_item(reservation), CLOCK_SHARD: shard, CLOCK_AT: at}


# The list access item names each org its reservations name in an attribute of its own,
# ``namedUntil:<org>`` = until when (epoch seconds; ``lifecycle.rules.history.named_until``):
# a write sets or removes one org's without reading the others (no map that must exist first).
NAMED_UNTIL = "namedUntil:"
# What items written before the moments were kept name: each org, with no end.
_NAMED_FOREVER = "namedOrgIds"


def named_attribute(org_id: str) -> str:
    return f"{NAMED_UNTIL}{org_id}"


def named_items(named_until: Mapping[str, datetime]) -> Item:
    return {named_attribute(org): epoch(until) for org, until in named_until.items()}


def named_from_item(item: Item) -> dict[str, datetime]:
    """Each org the list access item names, with until when."""
    named = dict.fromkeys(_strings(item.get(_NAMED_FOREVER)), LAST_MOMENT)
    for name, value in item.items():
        if name.startswith(NAMED_UNTIL):
            named[name.removeprefix(NAMED_UNTIL)] = datetime.fromtimestamp(int(value), UTC)
    return named


def access_item(node_id: str, access: ListAccess) -> Item:
    """The node's list access (a string set cannot be empty: no workload's org, no
    attribute), with the node's unit generations as its node item keeps them."""
    return {
        **access_key(node_id),
        LIST_PK: node_pk(node_id),
        "ownerOrgId": access.owner_org_id,
        **named_items(access.named_until),
        "workloadOrgIds": set(access.workload_org_ids) or None,
        UNITS_CHANGED_AT: _unit_generations(access),
    }


def access_from_item(item: Item) -> ListAccess:
    return ListAccess(
        owner_org_id=item["ownerOrgId"],
        named_until=named_from_item(item),
        unit_changed_at=_generations(item.get(UNITS_CHANGED_AT)),
        workload_org_ids=frozenset(_strings(item.get("workloadOrgIds"))),
    )


# A spot workload's promises, fixed at its placement (absent: 0, as on items from before).
PROMISED_NOTICE = "promisedNoticeSeconds"
PROMISED_MIN_RUN = "promisedMinRunSeconds"
# When a workload's use began, to the millisecond (absent while it waits, and on items from
# before it was kept).
USED_FROM = "usedFrom"


def workload_item(node_id: str, workload: Workload) -> Item:
    return {
        **workload_key(node_id, workload.id),
        "id": workload.id,
        "kind": workload.kind.value,
        "tier": workload.tier.value,
        "orgId": workload.org_id,
        "unitIds": list(workload.unit_ids),
        "state": workload.state.value,
        **_termination_attributes(workload.termination),
        OPEN_TERMINATION: workload.termination_state,
        "createdAt": _optional_time(workload.created_at),
        # Written only when promised: a workload without promises keeps the item it had.
        PROMISED_NOTICE: workload.promised_notice_seconds or None,
        PROMISED_MIN_RUN: workload.promised_min_run_seconds or None,
        WAITING_FOR: waiting_for_item(workload.waiting_for),
        USED_FROM: _optional_moment(workload.used_from),
        "version": workload.version,
    }


def waiting_for_item(waiting_for: tuple[tuple[str, str, datetime], ...]) -> list[Item] | None:
    """What a waiting workload waits on, as stored (None: absent)."""
    return [
        {"workloadId": w, "terminationId": t, "terminateAt": format_moment(at)}
        for w, t, at in waiting_for
    ] or None


def _waiting_for(stored: Any) -> tuple[tuple[str, str, datetime], ...]:
    return tuple(
        (str(entry["workloadId"]), str(entry["terminationId"]), parse_time(entry["terminateAt"]))
        for entry in stored or ()
    )


def _termination_attributes(termination: Termination | None) -> Item:
    """The workload's termination, flat on its item as it has always been stored."""
    t = termination or Termination("")
    return {
        "terminationId": termination.id if termination else None,
        "terminationReservationId": t.reservation_id,
        "terminationReason": t.reason,
        "terminationRequestedAt": format_moment(t.requested_at) if t.requested_at else None,
        "terminateAt": format_moment(t.terminate_at) if t.terminate_at else None,
        "terminationDeadlineChanges": t.deadline_changes or None,
        "terminationManagingOrgIds": list(t.managing_org_ids) or None,
        "deliveries": t.deliveries or None,
        "lastDeliveredAt": _optional_time(t.last_delivered_at),
        "stuckAt": _optional_time(t.stuck_at),
        **_last_report(t),
    }


def _last_report(termination: Termination) -> Item:
    """The node's last failed report, all three attributes or none: a report made before
    any delivery stores its count of 0, so the item still says a report came."""
    if termination.last_reported_at is None:
        return {}
    return {
        "terminationReportedDeliveries": termination.reported_deliveries,
        "terminationLastReportedAt": format_time(termination.last_reported_at),
        "terminationFailedReports": termination.failed_reports,
    }


def _termination_from_item(item: Item) -> Termination | None:
    """The termination's attributes as one value; None when the item has no termination."""
    termination_id = item.get("terminationId")
    if termination_id is None:
        return None
    return Termination(
        id=termination_id,
        reservation_id=item.get("terminationReservationId"),
        reason=item.get("terminationReason"),
        requested_at=_parse_optional(item.get("terminationRequestedAt")),
        terminate_at=_parse_optional(item.get("terminateAt")),
        deadline_changes=int(item.get("terminationDeadlineChanges", 0)),
        managing_org_ids=_strings(item.get("terminationManagingOrgIds")),
        deliveries=int(item.get("deliveries", 0)),
        last_delivered_at=_parse_optional(item.get("lastDeliveredAt")),
        stuck_at=_parse_optional(item.get("stuckAt")),
        reported_deliveries=int(item.get("terminationReportedDeliveries", 0)),
        last_reported_at=_parse_optional(item.get("terminationLastReportedAt")),
        failed_reports=int(item.get("terminationFailedReports", 0)),
    )


def _parse_optional(text: str | None) -> datetime | None:
    return parse_time(text) if text else None


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


def node_from_item(item: Item) -> Node:
    return Node(
        id=item["id"],
        owner_org_id=item["ownerOrgId"],
        topology_gen=_int(item.get("topologyGen")),
        queue_url=item.get("queueUrl"),
        version=int(item["version"]),
        created_at=_parse_optional(item.get("createdAt")),
        updated_at=_parse_optional(item.get("updatedAt")),
        unit_changed_at=_generations(item.get(UNITS_CHANGED_AT)),
        placements=int(item.get(PLACEMENTS, 0)),
    )


def _generations(value: Any) -> dict[str, int] | None:
    return None if value is None else {str(unit): int(gen) for unit, gen in value.items()}


def unit_from_item(item: Item) -> Unit:
    return Unit(
        id=item["id"],
        alloc_class=item["allocClass"],
        gpu_model_id=item["gpuModelId"],
        gpu_model_name=item.get("gpuModelName"),
        sellable_gpus=int(item["sellableGpus"]),
        sellable=bool(item["sellable"]),
        not_sellable_reason=item.get("notSellableReason"),
        claimed_by=item.get("claimedBy"),
        version=int(item["version"]),
        freed_at=_parse_optional(item.get(FREED_AT)),
        held_for=item.get(HELD_FOR),
    )


def reservation_from_item(item: Item) -> Reservation:
    ends_at, expires = item.get("endsAt"), item.get(EXPIRES_AT_EPOCH)
    return Reservation(
        id=item["id"],
        node_id=item["nodeId"],
        status=ReservationStatus(item["status"]),
        starts_at=parse_time(item["startsAt"]),
        ends_at=parse_time(ends_at) if ends_at else None,
        allowed_org_ids=_strings(item.get("allowedOrgIds")),
        managing_org_ids=_strings(item.get("managingOrgIds")),
        reserved_unit_ids=_strings(item.get("reservedUnitIds")),
        released_unit_ids=_strings(item.get("releasedUnitIds")),
        contract_ref=item.get("contractRef"),
        reason=item.get("reason"),
        topology_gen=_int(item.get("topologyGen")),
        lending=_lending(item.get(LENDING)),
        lending_since=_parse_optional(item.get(LENDING_SINCE)),
        lending_units=_lending_units(item.get(LENDING_UNITS)),
        lend_at=_parse_optional(item.get(LEND_AT)),
        created_at=parse_time(item["createdAt"]),
        updated_at=parse_time(item["updatedAt"]),
        version=int(item["version"]),
        retained_until=None if expires is None else datetime.fromtimestamp(int(expires), UTC),
        clock_fired=tuple(
            sorted((str(k), parse_time(v)) for k, v in (item.get(CLOCK_FIRED) or {}).items())
        ),
        warning_minutes=_int(item.get(WARNING_MINUTES)),
        armed_at=_parse_optional(item.get(ARMED_AT)),
        clock_read=item.get(CLOCK_AT),
    )


def workload_from_item(item: Item) -> Workload:
    return Workload(
        id=item["id"],
        kind=WorkloadKind(item["kind"]),
        tier=Tier(item["tier"]),
        org_id=item["orgId"],
        unit_ids=_strings(item.get("unitIds")),
        state=WorkloadState(item["state"]),
        termination=_termination_from_item(item),
        version=int(item["version"]),
        created_at=_parse_optional(item.get("createdAt")),
        promised_notice_seconds=int(item.get(PROMISED_NOTICE) or 0),
        promised_min_run_seconds=int(item.get(PROMISED_MIN_RUN) or 0),
        waiting_for=_waiting_for(item.get(WAITING_FOR)),
        used_from=_parse_optional(item.get(USED_FROM)),
    )


def snapshot_from_items(items: Iterable[Item]) -> NodeSnapshot | None:
    """Assemble a node's partition; None when the partition has no node item."""
    node: Node | None = None
    units: list[Unit] = []
    reservations: list[Reservation] = []
    workloads: list[Workload] = []
    for item in items:
        sort_key: str = item["SK"]
        if sort_key == NODE_SK:
            node = node_from_item(item)
        elif sort_key.startswith(UNIT_PREFIX):
            units.append(unit_from_item(item))
        elif sort_key.startswith(RESERVATION_PREFIX):
            reservations.append(reservation_from_item(item))
        elif sort_key.startswith(WORKLOAD_PREFIX):
            workloads.append(workload_from_item(item))
    if node is None:
        return None
    listed = node.unit_changed_at
    return NodeSnapshot(
        node=node,
        units=tuple(u for u in units if listed is None or u.id in listed),
        reservations=tuple(reservations),
        workloads=tuple(workloads),
        unlisted_units=tuple(u for u in units if listed is not None and u.id not in listed),
    )

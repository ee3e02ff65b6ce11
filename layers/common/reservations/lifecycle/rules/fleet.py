"""The fleet index and the fleet list's rules, pure.

The index (written from the table's stream, never in a reservation's own transaction) has
one entry per org that may see a reservation by role (the node's owner, each managing org,
each org of the audience) and one in the operator's index, under the org's partition for
the place the reservation is in (``live``: the node's partition; ``ended``: its history),
sorted by end (open-ended last), node, id. An entry keeps what every filter needs, so that
a reservation is read only when its entry may match (:func:`may_match`): the org's roles,
the stored status, the term, whether the node's units changed since it was sold (a derived
review, as the node was when the entry was written), and its units' GPU models. The list
then reads the reservation and its node again and decides from them (:func:`roles_now`):
an entry only finds a reservation, and never lists one on its own word.

A query's statuses decide the partitions and key ranges it reads (:func:`plan`):
- ``pending``, ``active``, ``needs-review`` are in ``live`` alone, and only those whose end
  is after now (an end passed is ``expired`` whatever the mover did);
- ``expired`` is in ``ended`` and in ``live`` up to now (passed, not moved yet);
- ``cancelled`` is in ``ended`` alone (a cancel moves the reservation in its transaction).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from reservations.kernel.errors import FieldProblem, InvalidRequest
from reservations.kernel.ids import is_resource_id
from reservations.kernel.times import format_time, parse_given_time, parse_time
from reservations.nodes import (
    NODE_HISTORY_PREFIX,
    Node,
    Reservation,
    ReservationStatus,
    status_at,
)

# The fleet index (written from the table's stream): one item per org that may see a
# reservation by role, and one in the operator's index (``FLEET#/platform#...``; "/" is in
# no org id), under ``FLEET#<org>#live`` (in a node's partition) or ``FLEET#<org>#ended``
# (in its history), sorted by ``<endsAt or OPEN_ENDS>#<node>#<reservation>``.
FLEET_PREFIX = "FLEET#"
FLEET_PLATFORM = "/platform"
FLEET_LIVE = "live"
FLEET_ENDED = "ended"
# An org's nodes (``FLEET#<owner>#nodes``, and every node in ``FLEET#/platform#nodes``),
# sorted by node id: what usage lists a node owner's rows by, reserved or not.
FLEET_NODES = "nodes"
# Sorts after every RFC 3339 time: an open-ended reservation's place in the fleet index.
OPEN_ENDS = "~"


def fleet_pk(org: str, liveness: str) -> str:
    """An org's (or, for ``FLEET_PLATFORM``, the operator's) fleet index partition."""
    return f"{FLEET_PREFIX}{org}#{liveness}"


def fleet_sk(ends_at: str | None, node_id: str, reservation_id: str) -> str:
    """A reservation's place in a fleet index: by end (open-ended last), node, id ("#"
    sorts below every character an id may have, so a shorter id sorts first)."""
    return f"{ends_at or OPEN_ENDS}#{node_id}#{reservation_id}"


OWNER, MANAGING, AUDIENCE = "owner", "managing", "audience"
ROLES = frozenset({OWNER, MANAGING, AUDIENCE})
LIVE_STATUSES = frozenset({"pending", "active", "needs-review"})
ALL_STATUSES = frozenset(status.value for status in ReservationStatus)
MAX_NODE_IDS = 50
# Below and above every sort key of an index partition (they start with a year, or "~").
FIRST, LAST = "0", "~~"

Entry = dict[str, Any]
EntryKey = tuple[str, str]


def index_entries(
    image: Mapping[str, Any] | None,
    owner: str | None,
    models: Mapping[str, str] | None = None,
    review: bool = False,
) -> dict[EntryKey, Entry]:
    """The index entries of one reservation item as stored (a stream image): each org's
    and the operator's, by key; none for no image. Each keeps the stored status and the
    term, and ``review``: whether the node's units changed since the reservation was sold
    (``nodes.changed_since_sold``, on the node as it is now). With ``models`` (the node's
    current units, id to GPU model), each entry keeps the models of the reservation's
    units, so a list by ``gpuModelId`` skips the entries of other models unread."""
    if not image:
        return {}
    liveness = FLEET_ENDED if str(image["PK"]).startswith(NODE_HISTORY_PREFIX) else FLEET_LIVE
    sort_key = fleet_sk(image.get("endsAt"), image["nodeId"], image["id"])
    common = {
        "SK": sort_key,
        "nodeId": image["nodeId"],
        "reservationId": image["id"],
        "liveness": liveness,
        "version": int(image.get("version", 0)),
        "expiresAtEpoch": image.get("expiresAtEpoch"),
        "status": image.get("status"),
        "startsAt": image.get("startsAt"),
        "endsAt": image.get("endsAt"),
        "review": review,
    }
    if models is not None:
        units = image.get("reservedUnitIds") or ()
        common["gpuModelIds"] = sorted({models[u] for u in units if u in models})
    entries = {(fleet_pk(FLEET_PLATFORM, liveness), sort_key): {
        "PK": fleet_pk(FLEET_PLATFORM, liveness), **common}}  # fmt: skip
    for org, held in _roles(image, owner).items():
        pk = fleet_pk(org, liveness)
        entries[(pk, sort_key)] = {"PK": pk, **common, "roles": sorted(held)}
    return entries


def _roles(image: Mapping[str, Any], owner: str | None) -> dict[str, set[str]]:
    """Each org that may see the reservation by role, with its roles."""
    roles: dict[str, set[str]] = {}
    for org, role in (
        *((owner, OWNER) for _ in range(1 if owner else 0)),
        *((org, MANAGING) for org in image.get("managingOrgIds") or ()),
        *((org, AUDIENCE) for org in image.get("allowedOrgIds") or ()),
    ):
        roles.setdefault(str(org), set()).add(role)
    return roles


def entry_status(entry: Entry, now: datetime) -> str | None:
    """The effective status the entry says its reservation has at ``now`` (as
    :func:`~reservations.nodes.effective_status` would, from what the entry keeps); None
    for an entry written before entries kept the status (its reservation is read)."""
    stored, starts = entry.get("status"), entry.get("startsAt")
    if stored is None or starts is None:
        return None
    ends = entry.get("endsAt")
    return status_at(
        ReservationStatus(stored),
        parse_time(str(starts)),
        parse_time(str(ends)) if ends else None,
        lambda: bool(entry.get("review")),
        now,
    ).value


def may_match(entry: Entry, filters: FleetFilters, everything: bool, now: datetime) -> bool:
    """Whether the entry's reservation may match the filters, by what the entry keeps:
    its node, the org's roles (not asked of the operator's own index), its status at
    ``now`` and its units' models. Only such a reservation is read (the read decides)."""
    if filters.node_ids is not None and entry["nodeId"] not in filters.node_ids:
        return False
    if not everything and not filters.roles.intersection(entry.get("roles") or ()):
        return False
    status = entry_status(entry, now)
    if status is not None and status not in filters.statuses:
        return False
    return may_hold_model(entry, filters.gpu_model_id)


def may_hold_model(entry: Entry, model: str | None) -> bool:
    """Whether the entry's reservation may hold a unit of ``model``: by the models the
    entry keeps (the list checks the units again, as they are now), or, for an entry
    written before entries kept them, until its reservation is read."""
    models = entry.get("gpuModelIds")
    return model is None or models is None or model in models


@dataclass(frozen=True)
class IndexChange:
    """What one change of a reservation does to the index: entries to put (new or changed)
    and keys to delete (conditioned on the version they were written from)."""

    puts: tuple[Entry, ...]
    deletes: tuple[tuple[EntryKey, int], ...]


def index_change(before: dict[EntryKey, Entry], after: dict[EntryKey, Entry]) -> IndexChange:
    """The entries ``after`` has that ``before`` had not, or had otherwise (the version
    aside: a write that changes nothing the index keeps writes nothing), and the keys only
    ``before`` had."""

    def same(a: Entry, b: Entry) -> bool:
        return {**a, "version": 0} == {**b, "version": 0}

    puts = tuple(e for k, e in after.items() if k not in before or not same(before[k], e))
    deletes = tuple((k, int(e["version"])) for k, e in before.items() if k not in after)
    return IndexChange(puts, deletes)


@dataclass(frozen=True)
class FleetFilters:
    """A fleet list's filters, checked: each a 400 naming its parameter when wrong."""

    roles: frozenset[str]
    statuses: frozenset[str]
    node_ids: frozenset[str] | None = None
    gpu_model_id: str | None = None
    ends_before: datetime | None = None
    ends_after: datetime | None = None
    role_given: bool = False

    def canonical(self) -> str:
        """The filters as one text (a cursor is bound to its hash)."""
        parts = (
            ",".join(sorted(self.roles)) + ("!" if self.role_given else ""),
            ",".join(sorted(self.statuses)),
            ",".join(sorted(self.node_ids)) if self.node_ids is not None else "*",
            self.gpu_model_id or "",
            format_time(self.ends_before) if self.ends_before else "",
            format_time(self.ends_after) if self.ends_after else "",
        )
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _items(text: str | None) -> list[str] | None:
    return None if not text else [part.strip(" ") for part in text.split(",")]


def _bad(field: str, problem: str) -> InvalidRequest:
    return InvalidRequest(f"{field} {problem}", [FieldProblem(field, problem)])


def _choice(field: str, text: str | None, known: frozenset[str]) -> frozenset[str] | None:
    names = _items(text)
    if names is None:
        return None
    if unknown := [name for name in names if name not in known]:
        raise _bad(field, f"has an unknown value {unknown[0][:40]!r}; one of {sorted(known)}")
    return frozenset(names)


def _time(field: str, text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_given_time(text)
    except ValueError as error:
        raise _bad(field, str(error)) from None


def parse_filters(
    role: str | None,
    status: str | None,
    node_id: str | None,
    gpu_model_id: str | None,
    ends_before: str | None,
    ends_after: str | None,
) -> FleetFilters:
    """The query's filters as given (a parameter given empty is absent)."""
    roles = _choice("role", role, ROLES)
    statuses = _choice("status", status, ALL_STATUSES)
    node_ids = _items(node_id)
    if node_ids is not None:
        if len(node_ids) > MAX_NODE_IDS:
            raise _bad("nodeId", f"names more than {MAX_NODE_IDS} nodes")
        if bad := [n for n in node_ids if not is_resource_id(n)]:
            raise _bad("nodeId", f"has a malformed node id {bad[0][:40]!r}")
    if gpu_model_id and not is_resource_id(gpu_model_id):
        raise _bad("gpuModelId", "is not a GPU model id")
    return FleetFilters(
        roles=roles or ROLES,
        statuses=statuses or LIVE_STATUSES,
        node_ids=frozenset(node_ids) if node_ids is not None else None,
        gpu_model_id=gpu_model_id or None,
        ends_before=_time("endsBefore", ends_before),
        ends_after=_time("endsAfter", ends_after),
        role_given=roles is not None,
    )


@dataclass(frozen=True)
class Range:
    """One index partition and the sort keys a query reads of it (both inclusive)."""

    pk: str
    low: str
    high: str


@dataclass(frozen=True)
class EntryFilter:
    """What the index itself drops of the entries a Query reads (a DynamoDB filter
    expression, its names and values): a superset of :func:`may_match`, so that a Query
    returns little more than what may match, whatever it reads."""

    expression: str
    names: dict[str, str]
    values: dict[str, Any]


# The stored statuses an effective one may come from (``nodes.rules.status``): a pending
# one turns active at its start; a live one under review by its node's units (``review``).
_STORED_AS = {
    "pending": ("pending",),
    "active": ("pending", "active"),
    "needs-review": ("needs-review",),
    "cancelled": ("cancelled",),
}


def entry_filter(filters: FleetFilters, everything: bool) -> EntryFilter | None:
    """The filter expression for ``filters`` (None when it would drop nothing): the
    nodes, the org's roles, the stored statuses the wanted ones may come from (any, when
    ``expired`` is wanted: any live one passes its end), the models. An entry written
    before entries kept statuses or models passes (its reservation is read)."""
    parts: list[str] = []
    names: dict[str, str] = {}
    values: dict[str, Any] = {}

    def any_of(name: str, attribute: str, given: list[str], test: str) -> str:
        names[f"#{name}"] = attribute
        tests = []
        for i, value in enumerate(given):
            values[f":{name}{i}"] = value
            tests.append(test.format(a=f"#{name}", v=f":{name}{i}"))
        return " OR ".join(tests)

    if filters.node_ids is not None:
        parts.append(any_of("node", "nodeId", sorted(filters.node_ids), "{a} = {v}"))
    if not everything and filters.roles != ROLES:
        parts.append(any_of("role", "roles", sorted(filters.roles), "contains({a}, {v})"))
    if "expired" not in filters.statuses:
        stored = sorted({s for wanted in filters.statuses for s in _STORED_AS[wanted]})
        test = any_of("status", "status", stored, "{a} = {v}")
        if "needs-review" in filters.statuses:
            names["#review"], values[":review"] = "review", True
            test += " OR #review = :review"
        parts.append(f"attribute_not_exists(#status) OR {test}")
    if filters.gpu_model_id is not None:
        test = any_of("model", "gpuModelIds", [filters.gpu_model_id], "contains({a}, {v})")
        parts.append(f"attribute_not_exists(#model) OR {test}")
    if not parts:
        return None
    return EntryFilter(" AND ".join(f"({part})" for part in parts), names, values)


def _second_up(moment: datetime) -> datetime:
    """``moment`` rounded up to a whole second (stored ends are whole seconds)."""
    whole = moment.astimezone(UTC).replace(microsecond=0)
    return whole if whole == moment else whole + timedelta(seconds=1)


def plan(index_org: str, filters: FleetFilters, now: datetime) -> list[Range]:
    """The partitions (one or two) and the ranges of each the filters read."""
    now_key = format_time(now) + "$"  # after "<now>#...": an end at now has passed
    low = format_time(_second_up(filters.ends_after)) if filters.ends_after else FIRST
    high = format_time(_second_up(filters.ends_before)) if filters.ends_before else LAST
    wanted = filters.statuses
    ranges = []
    if wanted & (LIVE_STATUSES | {"expired"}):
        live_low, live_high = low, high
        if "expired" not in wanted:
            live_low = max(low, now_key)
        elif not wanted & LIVE_STATUSES:
            live_high = min(high, now_key)
        ranges.append(Range(fleet_pk(index_org, FLEET_LIVE), live_low, live_high))
    if wanted & {"expired", "cancelled"}:
        ranges.append(Range(fleet_pk(index_org, FLEET_ENDED), low, high))
    return [r for r in ranges if r.low <= r.high]


def roles_now(org_id: str, node: Node, reservation: Reservation) -> frozenset[str]:
    """The roles ``org_id`` has on the reservation as read now."""
    return frozenset(
        role
        for role, holds in (
            (OWNER, node.owner_org_id == org_id),
            (MANAGING, org_id in reservation.managing_org_ids),
            (AUDIENCE, org_id in reservation.allowed_org_ids),
        )
        if holds
    )


def ends_match(filters: FleetFilters, reservation: Reservation) -> bool:
    """``endsBefore`` (``endsAt`` < it; never an open-ended one) and ``endsAfter``
    (``endsAt`` >= it, or open-ended), on the reservation as read."""
    ends = reservation.ends_at
    if filters.ends_before is not None and (ends is None or ends >= filters.ends_before):
        return False
    return filters.ends_after is None or ends is None or ends >= filters.ends_after


def is_platform_scope(index_org: str) -> bool:
    return index_org == FLEET_PLATFORM


def node_entry_changes(
    node_id: str, owner_before: str | None, owner_after: str | None
) -> tuple[list[EntryKey], list[EntryKey]]:
    """The node entries a node's new owner puts (its owner's and the operator's) and those
    its old owner's leave: (puts, deletes)."""
    if owner_after is None or owner_after == owner_before:
        return [], []
    puts = [(fleet_pk(owner_after, FLEET_NODES), node_id),
            (fleet_pk(FLEET_PLATFORM, FLEET_NODES), node_id)]  # fmt: skip
    deletes = [(fleet_pk(owner_before, FLEET_NODES), node_id)] if owner_before else []
    return puts, deletes

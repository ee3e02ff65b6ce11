"""How a person sees each kind of record (``--output table``): the few columns read first,
under short headings, one line each within 80 columns; and the API's fields in the order
``--output wide`` and ``csv`` give them. Values the client does not know (a new state, a new
event type) are shown as they came.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from reservations_client.cli.output import Column, Record, View, cell, field_of

# The present, for "in 3d" and "2h ago" (a test may stand in).
clock: Callable[[], datetime] = lambda: datetime.now(UTC)  # noqa: E731

_SPANS = ((365 * 86400, "y"), (86400, "d"), (3600, "h"), (60, "m"), (1, "s"))


def span(delta: timedelta) -> str:
    """A duration in its largest whole unit: ``3d``, ``5h``, ``0s``."""
    seconds = int(abs(delta.total_seconds()))
    for size, unit in _SPANS:
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return "0s"


def parsed(value: Any) -> datetime | None:
    """An API time (RFC 3339), or None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def utc_minute(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


def ago(moment: datetime) -> str:
    """``in 3d`` or ``2h ago``, from now."""
    delta = moment - clock()
    return f"in {span(delta)}" if delta >= timedelta(0) else f"{span(delta)} ago"


def relative(name: str, utc: bool = True) -> Callable[[Record], str]:
    """A time field as ``in 3d (2031-11-01 00:00Z)`` or ``2h ago (…)`` (without ``utc``: the
    first part alone); as it came when it is not a time."""

    def show(record: Record) -> str:
        moment = parsed(record.get(name))
        if moment is None:
            return cell(record.get(name))
        return f"{ago(moment)} ({utc_minute(moment)})" if utc else ago(moment)

    return show


def count(name: str) -> Callable[[Record], str]:
    """How many items a list field holds."""

    def show(record: Record) -> str:
        value = record.get(name)
        return str(len(value)) if isinstance(value, list) else cell(value)

    return show


def units_lent(record: Record) -> str:
    """A reservation's units and how many of them are lent: ``4/2``."""
    reserved, released = record.get("reservedUnitIds"), record.get("releasedUnitIds")
    held = len(reserved) if isinstance(reserved, list) else 0
    lent = len(released) if isinstance(released, list) else 0
    return f"{held}/{lent}"


def lent(record: Record) -> str:
    """``yes`` for a unit lent to the spot market; blank otherwise."""
    return "yes" if record.get("released") is True else ""


def subject(record: Record) -> str:
    """An event's subject; its id alone where the type says its kind already
    (``reservation.created`` about ``reservations/res-1``: ``res-1``)."""
    text, kind = cell(record.get("subject")), cell(record.get("type")).split(".", 1)[0]
    collection, _, name = text.partition("/")
    return name if name and kind and collection == f"{kind}s" else text


def actor(record: Record) -> str:
    """Who made an event: the org of the key, or the system (``clock``)."""
    data = record.get("data")
    made_by = data.get("actor") if isinstance(data, dict) else None
    if not isinstance(made_by, dict):
        return ""
    return cell(made_by.get("orgId") or made_by.get("system") or "")


def types(record: Record) -> str:
    """A subscription's event types: ``all`` when it names none."""
    given = record.get("types")
    return "all" if given is None else cell(given)


UNITS = View(
    columns=[
        Column("id", field_of("id")),
        Column("model", field_of("gpuModelId"), cut=1),
        Column("GPUs", field_of("sellableGpus"), justify="right"),
        Column("state", field_of("state"), cut=2),
        Column("claimed by", field_of("claimedBy"), cut=1),
        Column("reservation", field_of("reservationId")),
        Column("lent", lent),
    ],
    fields=[
        "id",
        "allocClass",
        "gpuModelId",
        "gpuModelName",
        "sellableGpus",
        "state",
        "claimedBy",
        "reservable",
        "notReservableReason",
        "reservationId",
        "released",
    ],
)
RESERVATIONS = View(
    columns=[
        Column("id", field_of("id")),
        Column("node", field_of("nodeId"), cut=1),
        Column("status", field_of("status"), cut=2),
        Column("ends", relative("endsAt"), cut=2),
        Column("units/lent", units_lent, justify="right"),
    ],
    fields=[
        "id",
        "nodeId",
        "status",
        "startsAt",
        "endsAt",
        "reservedUnitIds",
        "releasedUnitIds",
        "allowedOrgIds",
        "managingOrgIds",
        "contractRef",
        "reason",
        "topologyGen",
        "createdAt",
        "updatedAt",
        "etag",
    ],
)
EVENTS = View(
    columns=[
        Column("time", relative("time", utc=False)),  # -o wide: to the millisecond
        Column("type", field_of("type"), cut=3),
        Column("subject", subject, cut=2),
        Column("actor", actor, cut=1),
    ],
    fields=["time", "type", "subject", "id", "source", "data", "specversion", "datacontenttype"],
)
WORKLOADS = View(
    columns=[
        Column("id", field_of("id")),
        Column("kind", field_of("kind")),
        Column("tier", field_of("tier")),
        Column("org", field_of("orgId"), cut=1),
        Column("state", field_of("state"), cut=2),
        Column("units", count("unitIds"), justify="right"),
    ],
    fields=[
        "id",
        "nodeId",
        "kind",
        "tier",
        "orgId",
        "state",
        "unitIds",
        "createdAt",
        "termination",
    ],
)
SUBSCRIPTIONS = View(
    columns=[
        Column("id", field_of("id")),
        Column("url", field_of("url"), cut=2),
        Column("status", field_of("status")),
        Column("types", types, cut=1),
    ],
    fields=["id", "url", "status", "types", "description", "createdAt", "disabledAt"],
)
DELIVERIES = View(
    columns=[
        Column("at", relative("at", utc=False)),
        Column("event", field_of("eventId")),
        Column("try", field_of("attempt"), justify="right"),
        Column("state", field_of("state")),
        Column("HTTP", field_of("status"), justify="right"),
        Column("error", field_of("error"), cut=1),
    ],
    fields=["at", "eventId", "type", "attempt", "state", "status", "error", "nextAttemptAt"],
)

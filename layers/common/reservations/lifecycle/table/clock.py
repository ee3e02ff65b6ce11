"""A clock moment as TransactWriteItems actions: the reservation recording it fired and
moving on in the clock's index, where it is still as read (version and index place), its
version untouched; for an activation, the node's topology still as read."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.actions import Action, table
from reservations.kernel.aws.codec import Item, to_attributes
from reservations.kernel.settings import expiry_warning_minutes
from reservations.lifecycle.rules.clock import clock_shard, next_moment
from reservations.lifecycle.writes import ClockFire
from reservations.nodes import (
    CLOCK_AT,
    CLOCK_FIRED,
    CLOCK_SHARD,
    Reservation,
    clock_fired_item,
    reservation_item,
    reservation_key,
    topology_check,
)


def clock_attributes(reservation: Reservation) -> Item:
    """Where the reservation sits in the clock's index: its shard and its next armed
    moment (``lifecycle.rules.clock``), both None (absent) when nothing is armed. Every
    writer that changes a reservation's term or stored status writes them as this says."""
    moment = next_moment(reservation, expiry_warning_minutes())
    if moment is None:
        return {CLOCK_SHARD: None, CLOCK_AT: None}
    return {CLOCK_SHARD: clock_shard(reservation.id), CLOCK_AT: moment.key}


def armed_item(reservation: Reservation) -> Item:
    """The reservation's whole item (a create, a PATCH, a fleet's load), at its place in the
    clock's index."""
    return {**reservation_item(reservation), **clock_attributes(reservation)}


def clock_read_condition(read: str | None) -> tuple[str, dict[str, Any]]:
    """The condition that the reservation is still at the clock place it was read at
    (``read``: its ``clockAt`` as read, None when it had none)."""
    if read is None:
        return f"attribute_not_exists({CLOCK_AT})", {}
    return f"{CLOCK_AT} = :clockRead", {":clockRead": read}


def clock_fire_actions(fire: ClockFire) -> list[Action]:
    after = clock_attributes(fire.after)
    condition, values = clock_read_condition(fire.read.clock_read)
    values = {**values, ":v": fire.read.version, ":fired": clock_fired_item(fire.after)}
    update = f"SET {CLOCK_FIRED} = :fired"
    if after[CLOCK_AT] is None:
        update += f" REMOVE {CLOCK_AT}, {CLOCK_SHARD}"
    else:
        update += f", {CLOCK_AT} = :at, {CLOCK_SHARD} = :shard"
        values.update({":at": after[CLOCK_AT], ":shard": after[CLOCK_SHARD]})
    action: Action = {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(reservation_key(fire.read.node_id, fire.read.id)),
            "UpdateExpression": update,
            "ConditionExpression": f"version = :v AND {condition}",
            "ExpressionAttributeValues": to_attributes(values),
        }
    }
    if fire.topology is None:
        return [action]
    return [action, topology_check(fire.topology)]

"""A clock moment as TransactWriteItems actions: the reservation recording it fired and
moving on in the clock's index, where it is still as read (version and index place), its
version untouched; for an activation, the node's topology still as read."""

from __future__ import annotations

from reservations.kernel.aws.actions import Action, assignments, table
from reservations.kernel.aws.codec import Item, to_attributes
from reservations.kernel.settings import expiry_warning_minutes
from reservations.lifecycle.rules.clock import clock_shard, next_moment
from reservations.lifecycle.writes import ClockFire
from reservations.nodes import (
    Reservation,
    clock_attributes,
    clock_read_condition,
    reservation_item,
    reservation_key,
    topology_check,
)


def clock_place(reservation: Reservation) -> tuple[str, str] | None:
    """Where the reservation sits in the clock's index: its shard and its next armed
    moment's key (``lifecycle.rules.clock``), None when nothing is armed. Every writer that
    changes a reservation's term or stored status writes it (:func:`armed_clock`)."""
    moment = next_moment(reservation, expiry_warning_minutes())
    return None if moment is None else (clock_shard(reservation.id), moment.key)


def armed_clock(reservation: Reservation) -> Item:
    """The reservation's clock attributes as stored: the moments fired, and its place in the
    clock's index (both absent when nothing is armed)."""
    return clock_attributes(reservation, clock_place(reservation))


def armed_item(reservation: Reservation) -> Item:
    """The reservation's whole item (a create, a PATCH, a fleet's load), at its place in the
    clock's index."""
    return {**reservation_item(reservation), **armed_clock(reservation)}


def clock_fire_actions(fire: ClockFire) -> list[Action]:
    condition, values = clock_read_condition(fire.read.clock_read)
    sets, removes, clock_values = assignments(armed_clock(fire.after), "clock")
    update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
    action: Action = {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(reservation_key(fire.read.node_id, fire.read.id)),
            "UpdateExpression": update,
            "ConditionExpression": f"version = :v AND {condition}",
            "ExpressionAttributeValues": to_attributes(
                {**values, **clock_values, ":v": fire.read.version}
            ),
        }
    }
    if fire.topology is None:
        return [action]
    return [action, topology_check(fire.topology)]

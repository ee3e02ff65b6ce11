"""A re-affirm as TransactWriteItems: the reservation out of review, with its clock."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.actions import Action, assignments, table, version_check
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.times import format_time
from reservations.lifecycle.table.clock import armed_clock
from reservations.lifecycle.writes import ReaffirmWrite
from reservations.nodes import (
    Reservation,
    clock_read_condition,
    lending_attributes,
    node_key,
    reservation_key,
)


def reaffirm_actions(write: ReaffirmWrite) -> list[Action]:
    """The reservation out of review, conditioned on it and on the node as read."""
    return [_reaffirm_update(write), version_check(node_key(write.node_id), write.node.version)]


def _reaffirm_update(write: ReaffirmWrite) -> Action:
    values: dict[str, Any] = {
        ":status": write.status.value,
        ":gen": write.topology_gen,
        ":none": [],
        ":now": format_time(write.at),
        ":one": 1,
        ":v": write.reservation.version,
    }
    update = "SET #status = :status, releasedUnitIds = :none, updatedAt = :now, "
    if write.topology_gen is not None:
        update += "topologyGen = :gen, "
    else:
        del values[":gen"]
    condition = "version = :v"
    remove = ""
    if write.clock is not None:
        clock, remove = _reaffirm_clock(write.clock, values)
        update += clock
        still, read_values = clock_read_condition(write.clock.clock_read)
        condition += f" AND {still}"
        values.update(read_values)
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(reservation_key(write.node_id, write.reservation.id)),
            "UpdateExpression": update + "version = version + :one" + remove,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _reaffirm_clock(reservation: Reservation, values: dict[str, Any]) -> tuple[str, str]:
    """The SET clauses and the REMOVE clause that leave the reservation's clock record, its
    place in the clock's index and its lending attributes as the re-affirmed reservation has
    them."""
    sets, removed, clock_values = assignments(armed_clock(reservation), "clock")
    values.update(clock_values)
    if reservation.lending is not None:  # its idle time starts afresh (rules.lending)
        lent, unlent, lent_values = assignments(lending_attributes(reservation), "lend")
        sets += lent
        removed += unlent
        values.update(lent_values)
    return "".join(f"{clause}, " for clause in sets), (
        " REMOVE " + ", ".join(removed) if removed else ""
    )

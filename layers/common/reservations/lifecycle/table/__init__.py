"""How a reservation's writes are committed on its node's partition: a create, a change
(release, cancel, reclaim's sibling writes share it), a PATCH, a re-affirm, a move to the
node's history, a moment of the clock."""

from __future__ import annotations

from reservations.lifecycle.table.changes import change_actions
from reservations.lifecycle.table.clock import clock_fire_actions
from reservations.lifecycle.table.create import create_actions
from reservations.lifecycle.table.history import history_move_actions
from reservations.lifecycle.table.reaffirm import reaffirm_actions
from reservations.lifecycle.table.update import update_actions
from reservations.lifecycle.writes import (
    ClockFire,
    HistoryMove,
    ReaffirmWrite,
    ReservationChange,
    ReservationCreate,
    ReservationUpdate,
)
from reservations.nodes import Writer

# The wiring hands them to the node table. A create's token is its reservation's id; a move
# (the clock's doing) has none; a PATCH's is its write's id.
WRITERS = (
    Writer.sized(ReservationChange, change_actions),
    Writer(
        ReservationCreate, lambda create, _room: create_actions(create), lambda c: c.reservation.id
    ),
    Writer.sized(ReservationUpdate, update_actions),
    Writer.sized(ReaffirmWrite, reaffirm_actions),
    Writer.sized(HistoryMove, history_move_actions, token=None),
    Writer.sized(ClockFire, clock_fire_actions, token=None),
)

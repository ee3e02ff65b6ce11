"""``POST /v1/nodes/{nodeId}/reservations/{id}/cancel``: end a reservation early.

The operator or the node's owner, while it is pending, active or needs-review. It becomes
``cancelled`` with nothing released, so its units stop being governed; running workloads
keep running. One conditional write on the reservation's version with its audit record,
through the write pipeline.
"""

from __future__ import annotations

from datetime import datetime

from reservations.logic import changes
from reservations.logic.pipeline import Decision, Request, WriteSpec
from reservations.models.domain import Caller, NodeSnapshot, ReservationStatus
from reservations.models.errors import ApiError
from reservations.models.requests import CancelRequest, parse_cancel_request
from reservations.models.writes import ReservationChange
from reservations.rules.access import WRITE, may_write_reservations
from reservations.rules.cancel import cancel_refusal


def decide(
    snapshot: NodeSnapshot | None, request: Request[CancelRequest], caller: Caller, now: datetime
) -> ApiError | Decision[ReservationChange]:
    """Any reservation of a node the caller may write reservations on, cancelled."""
    found = changes.reservation_in(
        snapshot, request.route, lambda read, _reservation: may_write_reservations(caller, read)
    )
    if isinstance(found, ApiError):
        return found
    node, reservation = found[0].node, found[1]
    if refusal := cancel_refusal(reservation, node, now):
        return refusal
    cancelled = changes.change(
        "cancel",
        caller,
        reservation,
        node,
        request.new_id(),
        now,
        released_after=(),
        status_after=ReservationStatus.CANCELLED,
        reason=request.body.reason,
    )
    return changes.decided(reservation, node, cancelled)


CANCEL: WriteSpec[CancelRequest, ReservationChange] = WriteSpec(
    name="Cancel",
    noun="cancel",
    conflict="reservation {reservationId} kept changing while cancelling",
    permitted=lambda caller: caller.has(WRITE),
    may_on_node=changes.may_write_reservations_on,
    # The validated body: no body, {} and {"reason": null} are the same request.
    parse=parse_cancel_request,
    decide=decide,
    committed=changes.committed,
)

"""``POST /v1/nodes/{nodeId}/reservations/{id}/cancel``: end a reservation early.

The operator or the node's owner, while it is pending, active or needs-review. It becomes
``cancelled`` with nothing released, so its units stop being governed; running workloads
keep running. One strongly consistent Query, one conditional transaction on the
reservation's version with the audit record, retried on conflict.
"""

from __future__ import annotations

from collections.abc import Callable

from reservations.logic import changes, idempotency
from reservations.logic.ports import ChangePorts
from reservations.logic.reads import checked_reads
from reservations.logic.retries import retried
from reservations.models.domain import Caller, NodeSnapshot, Reservation, ReservationStatus
from reservations.models.errors import NotFound
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.ids import is_resource_id
from reservations.models.requests import CancelRequest, RawBody, parse_cancel_request
from reservations.rules.access import WRITE, may_write_reservations
from reservations.rules.cancel import cancel_refusal


def cancel(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    body: RawBody,
    idempotency_key: str | None,
    ports: ChangePorts,
) -> Outcome:
    """The answer to a cancel: 200 with the cancelled reservation, a replay, or an ApiError."""
    if not (is_resource_id(node_id) and is_resource_id(reservation_id) and caller.has(WRITE)):
        raise NotFound()
    read_node = checked_reads(
        caller, node_id, ports.store, lambda node: may_write_reservations(caller, node)
    )
    request = parse_cancel_request(body)
    # The validated body: no body, {} and {"reason": null} are the same request.
    path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/cancel"
    document = request.model_dump(mode="json", by_alias=True)
    keyed = idempotency.keyed(caller, idempotency_key, "POST", path, document)
    return retried(
        lambda: _attempt(caller, node_id, reservation_id, request, keyed, read_node, ports),
        ports.sleep,
        "Cancel",
        f"reservation {reservation_id} kept changing while cancelling",
    )


def _attempt(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    request: CancelRequest,
    keyed: IdempotentRequest | None,
    read_node: Callable[[], NodeSnapshot | None],
    ports: ChangePorts,
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    now = ports.clock()
    node, reservation = changes.reservation_in(read_node(), reservation_id, _may_cancel(caller))
    if refusal := cancel_refusal(reservation, node, now):
        return idempotency.refuse(keyed, refusal, now, ports.store.keep_answer)
    cancel_change = changes.change(
        "cancel",
        caller,
        reservation,
        node,
        now,
        released_after=(),
        status_after=ReservationStatus.CANCELLED,
        reason=request.reason,
    )
    outcome = changes.answer(reservation, node, cancel_change, now)
    return changes.commit(cancel_change, outcome, keyed, ports.store)


def _may_cancel(caller: Caller) -> Callable[[NodeSnapshot, Reservation], bool]:
    """Any reservation of a node the caller may write reservations on."""
    return lambda snapshot, _reservation: may_write_reservations(caller, snapshot)

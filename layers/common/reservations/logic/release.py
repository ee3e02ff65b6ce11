"""``POST /v1/nodes/{nodeId}/reservations/{id}/release``: lend units to the spot market.

The mirror of reclaim: the same callers, the same window (active, inside its term), the same
body. Named units join ``releasedUnitIds``; nothing running is touched (a unit the audience
is using stays theirs until it is free). One strongly consistent Query, one conditional
transaction on the reservation's version with the audit record, retried on conflict.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from reservations.logic import changes, idempotency
from reservations.logic.ports import ChangePorts
from reservations.logic.reads import checked_reads
from reservations.logic.retries import retried
from reservations.models.domain import Caller, NodeSnapshot
from reservations.models.errors import NotFound
from reservations.models.idempotency import IdempotentRequest, Outcome
from reservations.models.ids import is_resource_id
from reservations.models.requests import CapacityRequest, RawBody, parse_capacity_request
from reservations.rules.access import CAPACITY, may_manage_capacity, may_manage_capacity_of
from reservations.rules.capacity import capacity_refusal, released_after_release


def release(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    body: RawBody,
    idempotency_key: str | None,
    ports: ChangePorts,
) -> Outcome:
    """The answer to a release (or its dry run): 200 with its body, a replay, or an ApiError."""
    if not (is_resource_id(node_id) and is_resource_id(reservation_id) and caller.has(CAPACITY)):
        raise NotFound()
    read_node = checked_reads(
        caller,
        node_id,
        ports.store,
        lambda node: may_manage_capacity_of(caller, node, reservation_id),
    )
    request = parse_capacity_request(body)
    keyed = None
    if not request.dry_run:  # a dry run changes nothing: the header is neither kept nor checked
        path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/release"
        document = request.model_dump(mode="json", by_alias=True)
        keyed = idempotency.keyed(caller, idempotency_key, "POST", path, document)
    return retried(
        lambda: _attempt(caller, node_id, reservation_id, request, keyed, read_node, ports),
        ports.sleep,
        "Release",
        f"reservation {reservation_id} kept changing while releasing",
    )


def _attempt(
    caller: Caller,
    node_id: str,
    reservation_id: str,
    request: CapacityRequest,
    keyed: IdempotentRequest | None,
    read_node: Callable[[], NodeSnapshot | None],
    ports: ChangePorts,
) -> Outcome | None:
    """Read, decide, write once; None when a concurrent writer won and it must run again."""
    now = ports.clock()
    node, reservation = changes.reservation_in(
        read_node(), reservation_id, partial(may_manage_capacity, caller)
    )
    if refusal := capacity_refusal(reservation, node, request.unit_ids, now):
        return idempotency.refuse(keyed, refusal, now, ports.store.keep_answer)
    release_change = changes.change(
        "release",
        caller,
        reservation,
        node,
        now,
        released_after=released_after_release(reservation, request.unit_ids),
        unit_ids=tuple(sorted(request.unit_ids)),
        reason=request.reason,
    )
    outcome = changes.answer(reservation, node, release_change, now)
    if request.dry_run:
        return outcome
    return changes.commit(release_change, outcome, keyed, ports.store)

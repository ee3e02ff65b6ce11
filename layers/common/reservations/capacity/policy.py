"""``PUT`` and ``DELETE /v1/nodes/{nodeId}/reservations/{id}/lending``: a reservation's
lending policy, set whole or removed.

By the ones who release and reclaim, while the reservation is pending or active. Idempotent
by nature: no ``Idempotency-Key`` (a PUT of the policy stored, or a DELETE of none, writes
nothing and emits nothing); ``If-Match`` is honoured. A change is one conditional write on
the reservation's version (bumped: the policy is part of its object and its ``ETag``) and
the node's topology as read, with its ``reservation.updated``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from reservations.capacity.managing import MANAGERS
from reservations.capacity.models import LendingPolicyRequest, parse_policy_request
from reservations.capacity.rules.access import may_manage_capacity
from reservations.capacity.rules.idle import after_policy
from reservations.capacity.rules.policy import policy_refusal
from reservations.capacity.writes import PolicyChange
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.errors import NotFound
from reservations.kernel.event_context import by_caller
from reservations.kernel.idempotency.models import Outcome
from reservations.kernel.pipeline import Body, Commit, Committed, Decision, Request, WriteSpec
from reservations.kernel.writes import ItemVersion
from reservations.lifecycle import (
    ReservationNotChangeable,
    changes,
    found,
    reservation_answer,
    reservation_updated,
    reservation_view,
    route_reservation_etag,
)
from reservations.nodes import (
    LendingPolicy,
    NodePorts,
    NodeSnapshot,
    TopologyRead,
    node_partition,
    with_events,
)


def decide_set(
    snapshot: NodeSnapshot | None,
    request: Request[LendingPolicyRequest],
    caller: Caller,
    now: datetime,
) -> NotFound | ReservationNotChangeable | Decision[PolicyChange]:
    """The policy as given, and 200 with the reservation carrying it (and its new ETag);
    the reservation as it is, and no write, when it carries that policy already."""
    return _decide(snapshot, request, caller, now, request.body.policy())


def decide_clear(
    snapshot: NodeSnapshot | None, request: Request[None], caller: Caller, now: datetime
) -> NotFound | ReservationNotChangeable | Decision[PolicyChange]:
    """No policy, and 204 (also when it had none: then nothing is written)."""
    return _decide(snapshot, request, caller, now, None)


def _decide(
    snapshot: NodeSnapshot | None,
    request: Request[LendingPolicyRequest] | Request[None],
    caller: Caller,
    now: datetime,
    policy: LendingPolicy | None,
) -> NotFound | ReservationNotChangeable | Decision[PolicyChange]:
    acted_on = found(
        snapshot, request.route, lambda read, held: may_manage_capacity(caller, read, held)
    )
    if isinstance(acted_on, NotFound):
        return acted_on
    read, before = acted_on
    if refusal := policy_refusal(before, read.node, now):
        return refusal
    changed = before.lending != policy
    after = replace(before, lending=policy, updated_at=now, version=before.version + 1)
    shown = after if changed else before
    if policy is None:
        answer = Outcome(204, "")
    else:
        view = reservation_view(shown, read.node, now, shown.released_unit_ids, shown.updated_at)
        answer = reservation_answer(view)
    if not changed:
        return Decision(None, answer)
    write = PolicyChange(
        write_id=request.new_id(),
        node_id=before.node_id,
        reservation=ItemVersion(before.id, before.version),
        topology=TopologyRead(read.node.id, read.node.topology_gen),
        after=policy,
        caller_org_id=caller.org_id,
        caller_key_id=caller.key_id,
        at=now,
        lending_after=after_policy(before, policy, now),
    )
    return Decision(write, answer)


def policy_events(snapshot: NodeSnapshot | None, write: PolicyChange) -> tuple[StoredEvent, ...]:
    """``reservation.updated`` with ``data.changes.lending`` ``{from, to}``."""
    assert snapshot is not None  # a change is only decided on a node it read
    before = next(r for r in snapshot.reservations if r.id == write.reservation.id)
    after = replace(before, lending=write.after, updated_at=write.at, version=before.version + 1)
    context = by_caller(write, write.node_id, snapshot.node.owner_org_id, write.write_id)
    return (reservation_updated(context, after, changes(before, after), {}, None),)


def committed(write: PolicyChange) -> Committed:
    context = {
        "reservationId": write.reservation.id,
        "auto": bool(write.after and write.after.auto),
    }
    if write.after is None:
        return Committed("lending policy removed", context, {"LendingPoliciesRemoved": 1})
    return Committed("lending policy set", context, {"LendingPoliciesSet": 1})


def _no_body(_raw: RawBody) -> None:
    """A removal is named by its path alone: a body, if any, is not read."""


_COMMIT: Commit[NodeSnapshot | None, PolicyChange, NodePorts] = Commit(
    partition=node_partition, committed=committed, finish=with_events(policy_events)
)
SET_POLICY: WriteSpec[LendingPolicyRequest, NodeSnapshot | None, PolicyChange, NodePorts] = (
    WriteSpec(
        name="LendingPolicy",
        access=MANAGERS,
        body=Body(parse=parse_policy_request, keyed=False),
        decide=decide_set,
        commit=_COMMIT,
        conflict="reservation {reservationId} kept changing while setting its lending policy",
        etag=route_reservation_etag,
    )
)
CLEAR_POLICY: WriteSpec[None, NodeSnapshot | None, PolicyChange, NodePorts] = WriteSpec(
    name="LendingPolicyRemoval",
    access=MANAGERS,
    body=Body(parse=_no_body, keyed=False),
    decide=decide_clear,
    commit=_COMMIT,
    conflict="reservation {reservationId} kept changing while removing its lending policy",
    etag=route_reservation_etag,
)

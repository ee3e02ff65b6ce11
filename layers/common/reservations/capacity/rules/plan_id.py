"""A reclaim's plan as the dry run hands it out (``planId``) and its apply hands it back:
opaque, signed, bound to what the real write would be conditioned on, and nothing else.

``<payload>.<signature>``, both base64url. The payload (compact JSON) holds the expiry, the
notice, the reservation's version, the node's ``topologyGen``, each unit with its version,
and each workload on them with its version and its part in the plan (terminate, already
terminating, skip), the workload named by a short digest of its id (a workload id may be
128 characters: 32 of them in full would not keep a plan small). The node, the reservation
and the caller's org are not in the payload: they are in what is signed, so a plan made for
another node, reservation or org simply does not verify. The key is the service's signing
secret (the cursors'), derived for this purpose alone: a cursor is never a plan. Pure: the
key and the clock are passed in.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from reservations.capacity.models import MAX_PLAN_ID
from reservations.capacity.rules.plan import ReclaimPlan
from reservations.kernel.errors import FieldProblem, InvalidRequest
from reservations.nodes import Node, NodeSnapshot, Workload

# How long a dry run's plan may be applied.
PLAN_LIFETIME = timedelta(minutes=5)
_PURPOSE = b"reservations/reclaim-plan/v1"
_FIELD = "planId"


class Part(StrEnum):
    """A workload's part in the plan."""

    TERMINATE = "t"
    # Already terminating: counted as terminated; messaged again only when the plan's
    # notice moves its deadline earlier.
    TERMINATING = "a"
    SKIP = "s"


@dataclass(frozen=True, slots=True)
class BoundWorkload:
    digest: str
    version: int
    part: Part


@dataclass(frozen=True, slots=True)
class SignedPlan:
    """What a plan binds, as its apply reads it back."""

    expires_at: datetime
    notice_seconds: int
    reservation_version: int
    topology_gen: int | None
    units: tuple[tuple[str, int], ...]  # (unit id, version), by id
    workloads: tuple[BoundWorkload, ...]  # by digest

    @property
    def unit_ids(self) -> tuple[str, ...]:
        return tuple(unit_id for unit_id, _ in self.units)


@dataclass(frozen=True, slots=True)
class PlanScope:
    """Where a plan may be applied: this node, this reservation, by this org."""

    node_id: str
    reservation_id: str
    org_id: str


def workload_digest(workload_id: str) -> str:
    """A workload's name in a plan: 72 bits of SHA-256 of its id, base64url (12 chars)."""
    return _b64(hashlib.sha256(workload_id.encode()).digest()[:9])


def _parts(plan: ReclaimPlan) -> dict[str, tuple[Workload, Part]]:
    parted = [
        *((w, Part.TERMINATE) for w in plan.to_terminate),
        *((w, Part.TERMINATING) for w in plan.already_terminating),
        *((w, Part.SKIP) for w in plan.skipped),
    ]
    return {workload_digest(w.id): (w, part) for w, part in parted}


def bind(plan: ReclaimPlan, node: Node, notice_seconds: int, now: datetime) -> SignedPlan:
    """The plan as a dry run would hand it out at ``now``."""
    return SignedPlan(
        expires_at=now + PLAN_LIFETIME,
        notice_seconds=notice_seconds,
        reservation_version=plan.reservation.version,
        topology_gen=node.topology_gen,
        units=tuple(sorted((u.id, u.version) for u in plan.units)),
        workloads=tuple(
            BoundWorkload(digest, w.version, part)
            for digest, (w, part) in sorted(_parts(plan).items())
        ),
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(key: bytes, scope: PlanScope, payload: bytes) -> bytes:
    purpose_key = hmac.new(key, _PURPOSE, hashlib.sha256).digest()
    bound = "\n".join((scope.node_id, scope.reservation_id, scope.org_id)).encode()
    return hmac.new(purpose_key, bound + b"\n" + payload, hashlib.sha256).digest()


def _millis(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def encode_plan(signed: SignedPlan, scope: PlanScope, key: bytes) -> str:
    """The ``planId``: the payload and its signature, base64url."""
    fields: dict[str, Any] = {
        "x": _millis(signed.expires_at),
        "n": signed.notice_seconds,
        "r": signed.reservation_version,
        "g": signed.topology_gen,
        "u": [list(unit) for unit in signed.units],
        "w": [[w.digest, w.version, w.part.value] for w in signed.workloads],
    }
    payload = json.dumps(fields, separators=(",", ":")).encode()
    return f"{_b64(payload)}.{_b64(_signature(key, scope, payload))}"


def _not_this_plan() -> InvalidRequest:
    return InvalidRequest(
        "planId is not a plan of this reservation",
        [FieldProblem(_FIELD, "is not a plan this service made for this reservation and caller")],
    )


def decode_plan(text: str, scope: PlanScope, key: bytes) -> SignedPlan:
    """The plan, or 400 naming ``planId`` when it is malformed, altered, or made for another
    node, reservation or org (they cannot be told apart: each fails the signature)."""
    try:
        encoded, signature = text.split(".") if len(text) <= MAX_PLAN_ID else ("", "")
        payload = _unb64(encoded)
        if not hmac.compare_digest(_signature(key, scope, payload), _unb64(signature)):
            raise _not_this_plan()
        fields = json.loads(payload)
        return SignedPlan(
            expires_at=datetime.fromtimestamp(int(fields["x"]) / 1000, UTC),
            notice_seconds=int(fields["n"]),
            reservation_version=int(fields["r"]),
            topology_gen=None if fields["g"] is None else int(fields["g"]),
            units=tuple((str(u), int(v)) for u, v in fields["u"]),
            workloads=tuple(BoundWorkload(str(d), int(v), Part(p)) for d, v, p in fields["w"]),
        )
    except (ValueError, binascii.Error, KeyError, TypeError):
        # Not two parts, not base64 or JSON; or signed by this key but not a plan's shape
        # (which this module never signs).
        raise _not_this_plan() from None


def changes_since(
    signed: SignedPlan, snapshot: NodeSnapshot, plan: ReclaimPlan, now: datetime
) -> list[FieldProblem]:
    """What the plan was bound to that is no longer so, in words (empty: it still holds).
    ``plan`` is the plan's units planned again on ``snapshot``: the same workloads in the same
    parts at the same versions, or something changed."""
    if now >= signed.expires_at:
        return [FieldProblem(_FIELD, "the plan expired")]
    found = []
    reservation = plan.reservation
    if reservation.version != signed.reservation_version:
        found.append(
            f"reservation {reservation.id} changed since the plan (a release, a reclaim, "
            "a change or its end)"
        )
    if snapshot.node.topology_gen != signed.topology_gen:
        found.append(f"node {snapshot.node.id} has a new topology")
    units = {u.id: u.version for u in snapshot.units}
    found += [
        f"unit {unit_id} changed since the plan (a placement or an end on it)"
        for unit_id, version in signed.units
        if units.get(unit_id) != version
    ]
    now_parts = _parts(plan)
    for bound in signed.workloads:
        current = now_parts.get(bound.digest)
        if current is None:
            found.append("a workload the plan named is no longer on its units")
        elif (current[0].version, current[1]) != (bound.version, bound.part):
            found.append(f"workload {current[0].id} changed since the plan")
    planned = {bound.digest for bound in signed.workloads}
    found += [
        f"workload {w.id} is on the plan's units and the plan did not name it"
        for digest, (w, _) in sorted(now_parts.items())
        if digest not in planned
    ]
    return [FieldProblem(_FIELD, problem) for problem in dict.fromkeys(found)]

"""Lending by the clock: a scheduled pass (the clock's schedule: a minute in AWS, 10 s
locally) lends each reservation's idle units once they have been idle ``idleSeconds``, as a
release by its managers would, with actor ``{"system": "lending"}``.

What it reads grows with the reservations due, never with the fleet: one Query of each
partition of the lending index for the reservations whose ``lendAt`` has come, then for each
one Query of its node's partition (strongly consistent) and ONE transaction: the units lent
(``capacity.rules.idle``), one ``reservation.released`` naming them, the units' records and
the reservation's next ``lendAt``, conditioned on the reservation's version and its place in
the index as read, each lent unit's version (a claim since moves it) and the node's topology.

Two passes at once: one commits, the other's condition fails and it moves on. A write between
the read and the commit (a claim, a release, a take-back, a policy's change): the
reservation is left to the next pass, which reads it again, so no unit is lent on a moment
that passed it by. A pass that would lend nothing only moves the reservation's place in the
index on (without bumping its version).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from enum import StrEnum

from aws_lambda_powertools.metrics import MetricUnit

from reservations.capacity.rules import events as capacity_events
from reservations.capacity.rules.idle import lending_pass
from reservations.capacity.writes import LendingWrite
from reservations.kernel.envelope import EventContext, SystemActor
from reservations.kernel.observability import logger, metrics
from reservations.kernel.writes import ItemVersion, WriteConflict
from reservations.nodes import NodePorts, TopologyRead, lend_shards

# A pass stops starting transactions with less than this left of its invocation (seconds).
LENDING_RESERVE_SECONDS = 5.0
# How many due reservations one Query of a shard reads; a pass reads a shard's next page
# when it worked through one.
LENDING_PAGE = 100
# Who a lending is by, in its event's ``actor``.
LENDING_ACTOR = SystemActor("lending")


class LendingOutcome(StrEnum):
    LENT = "lent"  # units lent
    MOVED = "moved"  # nothing due yet: the reservation's place in the index moved on
    LEFT = "left"  # written since it was listed: the next pass reads it again
    DEFERRED = "deferred"  # no time left in this invocation


def run_lending(ports: NodePorts, time_left: Callable[[], float]) -> dict[LendingOutcome, int]:
    """One pass over every partition of the lending index, as far as the invocation allows
    (the rest waits for the next pass)."""
    now = ports.clock()
    counts = dict.fromkeys(LendingOutcome, 0)
    for shard in lend_shards():
        seen: set[tuple[str, str]] = set()
        while time_left() >= LENDING_RESERVE_SECONDS:
            page = ports.store.due_lending(shard, now, LENDING_PAGE)
            listed = [key for key in page if key not in seen]
            for node_id, reservation_id in listed:
                seen.add((node_id, reservation_id))
                if time_left() < LENDING_RESERVE_SECONDS:
                    counts[LendingOutcome.DEFERRED] += 1
                    continue
                counts[lend_due(ports, node_id, reservation_id, now)] += 1
            if not listed or len(page) < LENDING_PAGE:  # a short page: the shard is done
                break
    _report(counts)
    return counts


def lend_due(ports: NodePorts, node_id: str, reservation_id: str, now: datetime) -> LendingOutcome:
    """The reservation's idle units due at ``now`` lent, in one transaction, and its place
    in the lending index moved on."""
    snapshot = ports.store.load_node(node_id)
    reservations = snapshot.reservations if snapshot else ()
    reservation = next((r for r in reservations if r.id == reservation_id), None)
    if snapshot is None or reservation is None:
        return LendingOutcome.LEFT
    if reservation.lend_at is None or reservation.lend_at > now:
        return LendingOutcome.LEFT  # moved on since it was listed
    decided = lending_pass(reservation, snapshot.node, {u.id: u for u in snapshot.units}, now)
    lent = set(decided.unit_ids)
    write = LendingWrite(
        write_id=ports.new_id(),
        node_id=node_id,
        reservation=ItemVersion(reservation.id, reservation.version),
        lend_read=reservation.lend_at,
        topology=TopologyRead(snapshot.node.id, snapshot.node.topology_gen),
        unit_ids=decided.unit_ids,
        units=tuple(ItemVersion(u.id, u.version) for u in snapshot.units if u.id in lent),
        after=decided.after,
        at=now,
    )
    if lent:
        context = EventContext(
            node_id, snapshot.node.owner_org_id, write.write_id, now, LENDING_ACTOR
        )
        released = capacity_events.reservation_released(context, decided.after, lent, None)
        write = replace(write, events=(released,))
    try:
        ports.store.commit(write)
    except WriteConflict:
        return LendingOutcome.LEFT
    return LendingOutcome.LENT if lent else LendingOutcome.MOVED


def _report(counts: dict[LendingOutcome, int]) -> None:
    metrics.add_metric(
        name="LendingPasses", unit=MetricUnit.Count, value=counts[LendingOutcome.LENT]
    )
    if counts[LendingOutcome.DEFERRED]:
        logger.warning("lendings deferred", extra={"deferred": counts[LendingOutcome.DEFERRED]})

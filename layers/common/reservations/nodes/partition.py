"""A node's partition as the write pipeline reads and commits it (the path's ``nodeId``):
every write on a node, whatever its slice, goes through it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TypeVar

from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.pipeline import Partition, Route, StoreBacked
from reservations.kernel.ports import Clock
from reservations.nodes.models.partition import NodeSnapshot
from reservations.nodes.models.writes import EventedWrite, PartitionWrite
from reservations.nodes.ports import NodePorts, NodeReader, PartitionStore


@dataclass(frozen=True)
class NodePartition(StoreBacked[PartitionWrite]):
    """A node's partition, through the node store."""

    store: PartitionStore
    clock: Clock

    def read(self, route: Route, caller: Caller) -> NodeSnapshot | None:
        return _with_ended(
            self.store.load_node(route.params["nodeId"]), route, self.store, self.clock()
        )


E = TypeVar("E", bound=EventedWrite)
EventBuilder = Callable[[NodeSnapshot | None, E], tuple[StoredEvent, ...]]


def with_events(build: EventBuilder[E]) -> Callable[[NodeSnapshot | None, E], E]:
    """A spec's ``finish`` for a write on a node: the write with the events ``build``
    makes of it (written in its own transaction, its record)."""

    def finish(snapshot: NodeSnapshot | None, write: E) -> E:
        return replace(write, events=build(snapshot, write))

    return finish


def node_partition(ports: NodePorts) -> Partition[NodeSnapshot | None, PartitionWrite]:
    return NodePartition(ports.store, ports.clock)


def _with_ended(
    snapshot: NodeSnapshot | None, route: Route, store: NodeReader, now: datetime
) -> NodeSnapshot | None:
    """The node as read, with the route's reservation from the node's history when it is
    not in the node's partition (one GetItem, on that path alone): a write on an ended
    reservation is refused as one (409 ``reservation_not_active``), as before it moved,
    and only an unknown one, or one past its retention, is the 404."""
    reservation_id = route.params.get("reservationId")
    if snapshot is None or reservation_id is None:
        return snapshot
    if any(reservation.id == reservation_id for reservation in snapshot.reservations):
        return snapshot
    ended = store.load_ended(route.params["nodeId"], reservation_id)
    if ended is None or not ended.retained_at(now):
        return snapshot
    return replace(snapshot, reservations=(*snapshot.reservations, ended))

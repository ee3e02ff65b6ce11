"""The writes on a node's partition in domain terms (no table layout): what every write shares
(its events, the node's topology as read) and the node's own (registered or updated); each
slice declares its own writes beside it (``<slice>/writes.py``).

Every write is conditional on the versions of the items it was decided from: a concurrent
writer makes it fail whole, with :class:`WriteConflict`, and the logic reads again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from reservations.kernel.envelope import StoredEvent
from reservations.kernel.writes import ItemVersion
from reservations.nodes.models.partition import Node, Unit


@dataclass(frozen=True, slots=True)
class EventedWrite:
    """A write of a node's partition with its events, put in its own transaction (the
    pipeline asks the spec's builder); a keyword, after the write's own fields."""

    events: tuple[StoredEvent, ...] = field(default=(), kw_only=True)


@dataclass(frozen=True, slots=True)
class TopologyRead:
    """The node's topology generation as a write read it. A node update changes which
    reservations are under review without writing them (``nodes.rules.status`` derives it): a
    write deciding from a reservation's effective status conditions on this, so it never
    commits on a reservation that an update sent to review after the read."""

    node_id: str
    topology_gen: int | None


@dataclass(frozen=True, slots=True)
class UnitPut:
    """A unit the node write stores as ``unit`` (at its new version): absent when read
    (``read`` None) or still at the version read."""

    unit: Unit
    read: int | None


@dataclass(frozen=True, slots=True)
class NodePut(EventedWrite):
    """A node registered or updated, as one transaction: the node item (absent when read, or
    at ``node_read`` with ``placements_read`` placements) with its new generation and each
    unit's generation of last change, its new and changed units, the unit items to delete
    (units it no longer has, and ``leftovers`` an earlier update left), and its event
    (who, which units changed, which reservations that puts under review). No
    reservation is written: their review is derived from the node's generations."""

    write_id: str
    node: Node
    node_read: int | None
    placements_read: int
    units: tuple[UnitPut, ...]
    removed: tuple[ItemVersion, ...]
    leftovers: tuple[ItemVersion, ...]
    changed_unit_ids: tuple[str, ...]
    reviewed: int
    caller_org_id: str
    caller_key_id: str
    at: datetime


# Every conditional write on a node's partition, as the store's ``commit`` takes it (each
# one TransactWriteItems, all or nothing): a node's own (:class:`NodePut`) or one of a
# slice's, each declared with the slice's writes (``<slice>/writes.py``) and committed by
# its slice's ``Writer``.
PartitionWrite = EventedWrite

"""What the node slice's use cases, and every slice that writes a node's partition, need from
the world: the node store, split by use (``nodes.table.store.NodeTable`` is every part; so is
the tests' in-memory fake), and for a registration, the node's queue."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.kernel.ports import Ports
from reservations.nodes.models.partition import (
    ListAccess,
    Node,
    NodeSnapshot,
    Reservation,
    ReservationsRead,
)
from reservations.nodes.models.writes import PartitionWrite

# node id -> the node's spot-termination queue URL, made if missing (idempotent).
QueueMaker = Callable[[str], str]


# Not mutated: a Protocol runs no code, and a mutation switch on its defaults would make the
# node table no longer match it in the type check of every mutant that passes the table.
# The node store by use: each use case names the part it needs; the node table
# (``nodes.table.store.NodeTable``) and the tests' fake are all of them (:class:`NodeStore`).
class NodeReader(Protocol):  # pragma: no mutate block
    """A node's partition as a write decides from it, read strongly consistent."""

    def load_node(self, node_id: str) -> NodeSnapshot | None:
        """Everything the writes decide from; None for an unknown node."""

    def load_ended(self, node_id: str, reservation_id: str) -> Reservation | None:
        """One reservation of the node's history (retained or not), if it is there."""


class PartitionWriter(Protocol):  # pragma: no mutate block
    """A node's partition written one conditional transaction at a time, with the
    Idempotency-Key's records beside it (the pipeline's ``AnswerStore``)."""

    def commit(self, write: PartitionWrite, answer: AnswerRecord | None = None) -> None:
        """All or nothing, with the key's record when there is one; WriteConflict (with the
        live record that stood in the way, if any) when anything it read changed."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""

    def stored_answer(self, scope: str) -> StoredResponse | None:
        """The record kept under this scope, if any (live or not)."""


class PartitionStore(NodeReader, PartitionWriter, Protocol):  # pragma: no mutate block
    """A node's partition read and written: what the pipeline's node partition, and a
    report's close, go through."""


class ReservationReader(Protocol):  # pragma: no mutate block
    """A node's reservations as the API reads them: one, or a page."""

    def load_reservation(
        self, node_id: str, reservation_id: str
    ) -> tuple[Node | None, Reservation | None]:
        """The node and one of its reservations (None for either that is not there)."""

    def load_reservations(
        self, node_id: str, reservation_ids: Collection[str]
    ) -> list[Reservation]:
        """Those of the node's reservations that are there, live or in its history, by id
        (a read that grows with the ids, never with the node's other reservations)."""

    def list_access(self, node_id: str) -> ListAccess | None:
        """The node's list access alone (None: there is no such node)."""

    def reservation_page(
        self, node_id: str, after: str | None, history: bool = False, limit: int | None = 100
    ) -> ReservationsRead:
        """A page of the node's reservations after ``after``, with its list access: those
        in the node's partition, or with ``history`` those and its history, in one order
        (then a bounded read, at least ``limit`` + 1 of them, or with ``limit`` None as
        many as one Query reads; ``more`` when it stopped)."""


class DueReservations(Protocol):  # pragma: no mutate block
    """What the clock and the history mover list across the fleet (eventually consistent
    indexes), and the list access they prune."""

    def due_moves(self, now: datetime) -> Iterator[Reservation]:
        """Reservations still in a node's partition past their ``endsAt``, as listed."""

    def due_clock(self, shard: str, due_by: str, page: int) -> list[tuple[str, str]]:
        """One page of a clock index partition: at most ``page`` reservations (node id,
        reservation id) whose place in the index (their next armed moment's key) is at
        ``due_by`` or before, oldest first, as listed (eventually consistent)."""

    def due_lending(self, shard: str, due_by: datetime, page: int) -> list[tuple[str, str]]:
        """One page of a lending index partition: at most ``page`` reservations (node id,
        reservation id) whose ``lendAt`` is at ``due_by`` or before, oldest first, as listed
        (eventually consistent)."""

    def prune_named(self, node_id: str, now: datetime) -> int:
        """The orgs the node's list access names no more at ``now`` taken out (how many)."""


class NodeStore(
    PartitionStore, ReservationReader, DueReservations, Protocol
):  # pragma: no mutate block
    """The one table: every part above, as the slices' ports carry it."""


@dataclass(frozen=True, kw_only=True)
class NodePorts(Ports):
    """A node's partition, read and written."""

    store: NodeStore


@dataclass(frozen=True, kw_only=True)
class RegisterPorts(NodePorts):
    """... and the node's spot-termination queue, made on its registration."""

    make_queue: QueueMaker

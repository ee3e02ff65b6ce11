"""In-memory fakes of the logic's ports, with DynamoDB's semantics where the logic relies on
them: versioned items, all-or-nothing conditional transactions that fail with
WriteConflict (carrying the kept answer that stood in the way, as ALL_OLD does), and an
idempotency record written only while no live one exists. One :class:`FakeTable` is both
stores (the node store and the terminations store), as the one table is."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Self, TypeVar

from reservations.capacity.table import WRITERS as CAPACITY_WRITERS
from reservations.capacity.writes import ReclaimWrite
from reservations.kernel.aws.actions import MAX_ACTIONS
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.kernel.settings import expiry_warning_minutes
from reservations.kernel.writes import WriteConflict
from reservations.lifecycle import WRITERS as RESERVATION_WRITERS
from reservations.lifecycle.rules.clock import clock_shard, next_moment
from reservations.lifecycle.rules.history import named_orgs_until
from reservations.lifecycle.table.clock import armed_item, clock_place
from reservations.lifecycle.writes import (
    ReaffirmWrite,
    ReservationChange,
    ReservationCreate,
    ReservationUpdate,
)
from reservations.nodes.models.partition import (
    ListAccess,
    Node,
    NodeSnapshot,
    Reservation,
    ReservationsRead,
    Termination,
    TerminationState,
    Unit,
    Workload,
    WorkloadState,
    termination_of,
)
from reservations.nodes.models.writes import NodePut, PartitionWrite
from reservations.nodes.table.items import (
    access_item,
    named_from_item,
    node_from_item,
    node_item,
    reservation_from_item,
    reservation_history_item,
    unit_from_item,
    unit_item,
    workload_from_item,
    workload_item,
)
from reservations.nodes.table.keys import (
    ACCESS_SK,
    NODE_HISTORY_PREFIX,
    NODE_PREFIX,
    NODE_SK,
    RESERVATION_PREFIX,
    UNIT_PREFIX,
    WORKLOAD_PREFIX,
    lend_shard,
    node_id_of,
)
from reservations.nodes.table.store import Writer
from reservations.nodes.table.writes import WRITERS as NODE_WRITERS
from reservations.terminations.models import (
    OpenTermination,
    SendResult,
    SpotTermination,
    TerminationReport,
)
from reservations.terminations.table.store import WRITERS as TERMINATION_WRITERS
from reservations.terminations.writes import TerminationClose
from reservations.workloads.table import WRITERS as WORKLOAD_WRITERS
from reservations.workloads.writes import PlacementWrite, WorkloadEnd
from tests.support.ports import AllPorts
from tests.support.transactions import Item, Key, stored, transact

# Every write on a node's partition, each committed by the writer its slice's wiring hands
# the real table.
EVERY_WRITER = (
    *NODE_WRITERS,
    *RESERVATION_WRITERS,
    *CAPACITY_WRITERS,
    *WORKLOAD_WRITERS,
    *TERMINATION_WRITERS,
)
W = TypeVar("W", bound=PartitionWrite)
# A history item's retention when the model names none.
_FOREVER = datetime(9999, 1, 1, tzinfo=UTC)


@dataclass
class NodePartition:
    node: Node
    units: dict[str, Unit] = field(default_factory=dict)
    reservations: dict[str, Reservation] = field(default_factory=dict)
    workloads: dict[str, Workload] = field(default_factory=dict)
    # The node's history (NODEHIST#): ended reservations moved out of the partition.
    history: dict[str, Reservation] = field(default_factory=dict)
    # The node's list access (~ACCESS): until when each org is named, as the writes set it.
    named: dict[str, datetime] = field(default_factory=dict)

    def snapshot(self) -> NodeSnapshot:
        """As the table reads it: unit items the node does not list are left over."""
        listed = self.node.unit_changed_at
        units = list(self.units.values())
        return NodeSnapshot(
            self.node,
            tuple(u for u in units if listed is None or u.id in listed),
            tuple(as_read(r) for r in self.reservations.values()),
            tuple(self.workloads.values()),
            tuple(u for u in units if listed is not None and u.id not in listed),
        )


def as_read(reservation: Reservation) -> Reservation:
    """A reservation as the table reads it: with its place in the clock's index, which a
    write on it conditions on (``clock_read`` takes no part in equality)."""
    place = clock_place(reservation)
    return replace(reservation, clock_read=None if place is None else place[1])


class FakeTable:
    """Node partitions keyed by node id, the idempotency records, audit and history: the
    node store and the terminations store of ``<slice>.ports``."""

    def __init__(self, now: Callable[[], datetime], writers: Sequence[Writer[Any]] = ()) -> None:
        # How each write is committed: by its slice's writer, as the real table
        # (``nodes.table.store.NodeTable``) is handed them.
        self._writers = {w.kind: w for w in (*EVERY_WRITER, *writers)}
        self.nodes: dict[str, NodePartition] = {}
        self.answers: dict[str, AnswerRecord] = {}
        self.committed: list[PartitionWrite] = []  # every write, as committed
        # The items outside node partitions and their histories that writes put (a
        # workload's history), by key.
        self.items: dict[Key, Item] = {}
        self.failed_reports: list[TerminationReport] = []  # the ones recorded
        self.clock_queries = 0  # Queries of the clock's index
        self.lending_queries = 0  # Queries of the lending index
        self.page_size = 1000  # reservations one Query returns before its 1 MB limit
        self.events: list[StoredEvent] = []  # every committed write's, in commit order
        self.reads = 0
        self.writes = 0
        # Run after a read, before its write: a concurrent writer getting there first.
        self.between_read_and_write: list[Callable[[], None]] = []
        self._now = now

    @classmethod
    def sharing(cls, table: FakeTable) -> Self:
        """A view of ``table``'s very data (its items, records and counts): a subclass that
        races or fails a step sees and changes what the test's table holds."""
        view = cls(table._now)
        view.__dict__ = table.__dict__
        return view

    def add(
        self,
        node: Node,
        units: Sequence[Unit] = (),
        reservations: Sequence[Reservation] = (),
        workloads: Sequence[Workload] = (),
    ) -> None:
        self.nodes[node.id] = NodePartition(
            node,
            {u.id: u for u in units},
            {r.id: r for r in reservations},
            {w.id: w for w in workloads},
            named=named_orgs_until(reservations, 400),  # as the loader's creates leave it
        )

    def seed(self, node_id: str, *reservations: Reservation) -> None:
        """Reservations put on a node as the loader's creates leave them: each org they
        name named in the node's list access until the latest of its moments."""
        partition = self.nodes[node_id]
        for reservation in reservations:
            partition.reservations[reservation.id] = reservation
        named = named_orgs_until(
            (*partition.reservations.values(), *partition.history.values()), 400
        )
        partition.named.update(named)

    # --- the node store ----------------------------------------------------------------

    def load_node(self, node_id: str) -> NodeSnapshot | None:
        self.reads += 1
        partition = self.nodes.get(node_id)
        snapshot = partition.snapshot() if partition else None
        while self.between_read_and_write:
            self.between_read_and_write.pop(0)()
        return snapshot

    def commit(self, write: PartitionWrite, answer: AnswerRecord | None = None) -> None:
        """All or nothing, with the key's record, as ``nodes.table.store.NodeTable.commit``:
        the write's own actions, as its slice's writer makes them, applied to the items
        the node partitions are (the room its events and the record leave)."""
        self.writes += 1
        writer = self._writers.get(type(write))
        if writer is None:
            raise TypeError(f"this table has no writer of {type(write).__name__}")
        stored = self._live_answer(answer)
        if stored is not None:
            raise WriteConflict("ConditionalCheckFailed", stored)
        room = MAX_ACTIONS - len(write.events) - (answer is not None)
        written = transact(writer.actions(write, room), self._item)
        for key in sorted(written, key=lambda key: key[1] != NODE_SK):  # a new node first
            self._keep(key, written[key])
        self.committed.append(write)
        self.events.extend(write.events)
        if answer is not None:
            self.answers[answer.request.scope] = answer

    def _of(self, kind: type[W]) -> list[W]:
        return [write for write in self.committed if isinstance(write, kind)]

    @property
    def audit(self) -> list[ReclaimWrite]:
        return self._of(ReclaimWrite)

    @property
    def history(self) -> list[TerminationClose]:
        return self._of(TerminationClose)

    @property
    def placements(self) -> list[PlacementWrite]:
        return self._of(PlacementWrite)

    @property
    def ended(self) -> list[WorkloadEnd]:
        return self._of(WorkloadEnd)

    @property
    def changes(self) -> list[ReservationChange]:
        """Releases and cancels, as committed."""
        return self._of(ReservationChange)

    @property
    def created(self) -> list[ReservationCreate]:
        return self._of(ReservationCreate)

    @property
    def updated(self) -> list[ReservationUpdate]:
        """PATCHes, as committed."""
        return self._of(ReservationUpdate)

    @property
    def node_writes(self) -> list[NodePut]:
        return self._of(NodePut)

    @property
    def reaffirmed(self) -> list[ReaffirmWrite]:
        return self._of(ReaffirmWrite)

    # --- the items the partitions are --------------------------------------------------

    def _item(self, key: Key) -> Item | None:
        """The item under ``key`` as the table holds it (the partitions' own, as their
        items; any other as a write put it)."""
        pk, sk = key
        if pk.startswith(NODE_HISTORY_PREFIX):
            partition = self.nodes.get(pk.removeprefix(NODE_HISTORY_PREFIX))
            ended = (
                partition.history.get(sk.removeprefix(RESERVATION_PREFIX)) if partition else None
            )
            if ended is None:
                return None
            return stored(reservation_history_item(ended, ended.retained_until or _FOREVER))
        partition = self.nodes.get(node_id_of(pk)) if pk.startswith(NODE_PREFIX) else None
        if partition is None:
            return self.items.get(key)
        node = partition.node
        if sk == NODE_SK:
            return stored(node_item(node))
        if sk == ACCESS_SK:
            access = ListAccess(node.owner_org_id, dict(partition.named), node.unit_changed_at)
            return stored(access_item(node.id, access))
        for prefix, held, as_item in self._kinds(partition):
            if sk.startswith(prefix):
                found = held.get(sk.removeprefix(prefix))
                return None if found is None else stored(as_item(found))
        return self.items.get(key)

    @staticmethod
    def _kinds(
        partition: NodePartition,
    ) -> list[tuple[str, dict[str, Any], Callable[[Any], Item]]]:
        node_id = partition.node.id
        return [
            (UNIT_PREFIX, partition.units, lambda unit: unit_item(node_id, unit)),
            (RESERVATION_PREFIX, partition.reservations, armed_item),
            (WORKLOAD_PREFIX, partition.workloads, lambda w: workload_item(node_id, w)),
        ]

    def _keep(self, key: Key, item: Item | None) -> None:
        """The item as a write left it, back in its partition's model (None: deleted)."""
        pk, sk = key
        if pk.startswith(NODE_HISTORY_PREFIX):
            history = self.nodes[pk.removeprefix(NODE_HISTORY_PREFIX)].history
            reservation_id = sk.removeprefix(RESERVATION_PREFIX)
            if item is None:
                history.pop(reservation_id, None)
            else:
                history[reservation_id] = reservation_from_item(item)
            return
        if not pk.startswith(NODE_PREFIX):
            if item is None:
                self.items.pop(key, None)
            else:
                self.items[key] = item
            return
        node_id = node_id_of(pk)
        if sk == NODE_SK:
            assert item is not None, "no write deletes a node"
            if node_id in self.nodes:
                self.nodes[node_id].node = node_from_item(item)
            else:
                self.nodes[node_id] = NodePartition(node_from_item(item))
            return
        partition = self.nodes[node_id]
        if sk == ACCESS_SK:
            partition.named = named_from_item(item or {})
            return
        decoders: dict[str, Callable[[Item], Any]] = {
            UNIT_PREFIX: unit_from_item,
            RESERVATION_PREFIX: reservation_from_item,
            WORKLOAD_PREFIX: workload_from_item,
        }
        for prefix, held, _ in self._kinds(partition):
            if sk.startswith(prefix):
                if item is None:
                    held.pop(sk.removeprefix(prefix), None)
                else:
                    held[sk.removeprefix(prefix)] = decoders[prefix](item)
                return

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        self.writes += 1
        stored = self._live_answer(answer)
        if stored is None:
            self.answers[answer.request.scope] = answer
        return stored

    def record_failed_report(self, report: TerminationReport, at: datetime) -> Workload | None:
        """As ``terminations.table.store.record_failed_report``: only on the workload still open under
        the report's termination id, the deliveries so far copied, back to "open", the
        version left alone; the workload as it was, or None with nothing written."""
        self.writes += 1
        partition = self.nodes.get(report.node_id)
        current = partition.workloads.get(report.workload_id) if partition else None
        if (
            partition is None
            or current is None
            or current.state is not WorkloadState.TERMINATING
            or termination_of(current).id != report.termination_id
        ):
            return None
        before = termination_of(current)
        reported = replace(
            before,
            reported_deliveries=before.deliveries,
            last_reported_at=at.replace(microsecond=0),  # as the table stores it
            failed_reports=before.failed_reports + 1,
            stuck_at=None,
        )
        partition.workloads[current.id] = replace(current, termination=reported)
        self.failed_reports.append(report)
        return current

    def load_reservation(
        self, node_id: str, reservation_id: str
    ) -> tuple[Node | None, Reservation | None]:
        self.reads += 1
        partition = self.nodes.get(node_id)
        if partition is None:
            return None, None
        live = partition.reservations.get(reservation_id)
        return partition.node, as_read(live) if live else partition.history.get(reservation_id)

    def load_reservations(
        self, node_id: str, reservation_ids: Collection[str]
    ) -> list[Reservation]:
        ids = sorted(set(reservation_ids))
        self.reads += (len(ids) + 49) // 50
        partition = self.nodes.get(node_id)
        if partition is None:
            return []
        live = partition.reservations
        found = [as_read(live[i]) if i in live else partition.history.get(i) for i in ids]
        return [r for r in found if r is not None]

    def list_access(self, node_id: str) -> ListAccess | None:
        self.reads += 1
        partition = self.nodes.get(node_id)
        if partition is None:
            return None
        node = partition.node
        return ListAccess(node.owner_org_id, dict(partition.named), node.unit_changed_at)

    def reservation_page(
        self, node_id: str, after: str | None, history: bool = False, limit: int | None = 100
    ) -> ReservationsRead:
        """As the Query reads: ids in order, at most ``page_size`` reservations (DynamoDB's
        1 MB), ``more`` when it stopped early, and the node's list access as it is now
        (read with the page, or by a second read when the Query stopped early), with the
        node's unit generations."""
        self.reads += 1
        partition = self.nodes.get(node_id)
        if partition is None:
            return ReservationsRead(None, (), False)
        listed = (
            {**partition.history, **partition.reservations} if history else partition.reservations
        )
        ordered = sorted(listed.values(), key=lambda r: r.id)
        following = [r for r in ordered if after is None or r.id > after]
        bounded = history and limit is not None
        window = min(self.page_size, max(limit or 0, 100) + 1) if bounded else self.page_size
        read = following[:window]
        more = len(following) > len(read)
        self.reads += more
        node = partition.node
        access = ListAccess(node.owner_org_id, dict(partition.named), node.unit_changed_at)
        live = partition.reservations
        return ReservationsRead(
            access, tuple(as_read(r) if r.id in live else r for r in read), more
        )

    def stored_answer(self, scope: str) -> StoredResponse | None:
        self.reads += 1
        kept = self.answers.get(scope)
        if kept is None:
            return None
        return StoredResponse(kept.request.request_hash, kept.outcome, kept.expires_at)

    def due_clock(self, shard: str, due_by: str, page: int) -> list[tuple[str, str]]:
        """The clock index's partition (here it never lags): due first, at most ``page``."""
        self.clock_queries += 1
        warning = expiry_warning_minutes()
        due = []
        for partition in list(self.nodes.values()):
            for reservation in partition.reservations.values():
                moment = next_moment(reservation, warning)
                if (
                    moment is not None
                    and moment.key <= due_by
                    and clock_shard(reservation.id) == shard
                ):
                    due.append((moment.key, reservation))
        ordered = [r for _, r in sorted(due, key=lambda pair: pair[0])][:page]
        return [(r.node_id, r.id) for r in ordered]

    def due_lending(self, shard: str, due_by: datetime, page: int) -> list[tuple[str, str]]:
        """The lending index's partition (here it never lags): due first, at most ``page``."""
        self.lending_queries += 1
        due = [
            (reservation.lend_at, reservation.node_id, reservation.id)
            for partition in list(self.nodes.values())
            for reservation in partition.reservations.values()
            if reservation.lend_at is not None
            and reservation.lend_at <= due_by
            and lend_shard(reservation.id) == shard
        ]
        return [(node_id, reservation_id) for _, node_id, reservation_id in sorted(due)[:page]]

    def load_ended(self, node_id: str, reservation_id: str) -> Reservation | None:
        self.reads += 1
        partition = self.nodes.get(node_id)
        return partition.history.get(reservation_id) if partition else None

    def prune_named(self, node_id: str, now: datetime) -> int:
        """The orgs named no more at ``now`` taken out of the node's list access."""
        partition = self.nodes.get(node_id)
        stale = [] if partition is None else [o for o, u in partition.named.items() if u <= now]
        for org_id in stale:
            del partition.named[org_id]  # type: ignore[union-attr]
        return len(stale)

    def due_moves(self, now: datetime) -> Iterator[Reservation]:
        """The sparse index of live reservations' ends (here it never lags)."""
        for partition in list(self.nodes.values()):
            for reservation in list(partition.reservations.values()):
                if reservation.ends_at is not None and reservation.ends_at <= now:
                    yield as_read(reservation)

    # --- the terminations store ---------------------------------------------------------

    def listed(self, state: TerminationState) -> Iterator[OpenTermination]:
        """The sparse index's partition (here it never lags)."""
        for node_id, nodes in list(self.nodes.items()):
            for workload in list(nodes.workloads.values()):
                if workload.termination_state is state:
                    yield OpenTermination(node_id, workload)

    def read(self, node_id: str, workload_id: str) -> OpenTermination | None:
        workload = self.nodes[node_id].workloads.get(workload_id)
        if workload is None or workload.state is not WorkloadState.TERMINATING:
            return None
        return OpenTermination(node_id, workload)

    def node_queue_url(self, node_id: str) -> str | None:
        return self.nodes[node_id].node.queue_url

    def record_delivery(self, termination: OpenTermination, now: datetime) -> None:
        """Of the deadline it carried only (a reclaim may have moved it since the read)."""
        current = self.nodes[termination.node_id].workloads.get(termination.workload.id)
        moves = termination.termination.deadline_changes
        if current is None or termination_of(current).deadline_changes != moves:
            return
        self._termination_update(
            termination,
            lambda t: replace(t, deliveries=t.deliveries + 1, last_delivered_at=now),
        )

    def node_owner(self, node_id: str) -> str | None:
        partition = self.nodes.get(node_id)
        return partition.node.owner_org_id if partition else None

    def mark_stuck(self, termination: OpenTermination, now: datetime, stuck: StoredEvent) -> bool:
        """Only while still open, and no failed report came since ``termination`` was read;
        with its event."""
        current = self.read(termination.node_id, termination.workload.id)
        if (
            current is None
            or current.termination.stuck_at is not None
            or current.termination.failed_reports != termination.termination.failed_reports
        ):
            return False
        marked = self._termination_update(termination, lambda t: replace(t, stuck_at=now))
        if marked:
            self.events.append(stuck)
        return marked

    def _termination_update(
        self, termination: OpenTermination, change: Callable[[Termination], Termination]
    ) -> bool:
        workloads = self.nodes[termination.node_id].workloads
        current = workloads.get(termination.workload.id)
        if current is None or termination_of(current).id != termination.termination_id:
            return False  # a report closed it meanwhile
        workloads[current.id] = replace(current, termination=change(termination_of(current)))
        return True

    # --- semantics ---------------------------------------------------------------------

    def _live_answer(self, answer: AnswerRecord | None) -> StoredResponse | None:
        if answer is None:
            return None
        kept = self.answers.get(answer.request.scope)
        # The record's condition compares whole seconds, as expiresAtEpoch does.
        if kept is None or int(kept.expires_at.timestamp()) <= int(answer.created_at.timestamp()):
            return None
        return StoredResponse(kept.request.request_hash, kept.outcome, kept.expires_at)


class FakeQueue:
    """Node queues that record what they accept; ``down`` makes every send fail, and
    ``missing`` names queue URLs that do not exist."""

    def __init__(self) -> None:
        self.messages: dict[str, list[SpotTermination]] = {}
        self.deduplication_ids: list[str] = []
        self.group_ids: list[str] = []
        self.down = False
        self.missing: set[str] = set()

    def send_batch(
        self,
        queue_url: str,
        messages: Sequence[SpotTermination],
        deduplication_ids: Mapping[str, str] | None = None,
        group_ids: Mapping[str, str] | None = None,
    ) -> set[str]:
        """The reclaim's send: the termination ids accepted (none while down)."""
        if self.down or queue_url in self.missing:
            return set()
        dedup, groups = deduplication_ids or {}, group_ids or {}
        self.messages.setdefault(queue_url, []).extend(messages)
        self.deduplication_ids.extend(
            dedup.get(m.termination_id, m.termination_id) for m in messages
        )
        self.group_ids.extend(groups.get(m.termination_id, m.workload_id) for m in messages)
        return {m.termination_id for m in messages}

    def send(
        self,
        queue_url: str,
        message: SpotTermination,
        deduplication_id: str,
        *,
        group_id: str | None = None,
    ) -> SendResult:
        """The sweeper's send."""
        if queue_url in self.missing:
            return SendResult.NO_QUEUE
        if self.down:
            return SendResult.FAILED
        self.messages.setdefault(queue_url, []).append(message)
        self.deduplication_ids.append(deduplication_id)
        self.group_ids.append(group_id or message.workload_id)
        return SendResult.ACCEPTED

    def sent(self, queue_url: str) -> list[SpotTermination]:
        return self.messages.get(queue_url, [])


@dataclass
class FakeClock:
    """A clock that moves only when told."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


# Numbered ids, never the same twice in a run (as random ones would not be).
_IDS = itertools.count(1)


def ports(
    store: FakeTable, clock: FakeClock, queue: FakeQueue | None = None, **overrides: Any
) -> AllPorts:
    """Every port over the fakes: the table as both node stores, the org webhooks beside it,
    the queue's two sends, queues named after their node, numbered ids, no backoff."""
    from tests.support.hook_fakes import FakeSubscriptionStore  # it builds on FakeTable

    queue = queue or FakeQueue()
    fakes: dict[str, Any] = {
        "store": store,
        "terminations": store,
        "clock": clock,
        "send_terminations": queue.send_batch,
        "send_termination": queue.send,
        "make_queue": lambda node_id: f"https://sqs.test/{node_id}.fifo",
        "webhooks": FakeSubscriptionStore(store),
        "queue_delivery": lambda _request: None,
        "new_id": lambda: f"id-{next(_IDS)}",
        "sleep": lambda _s: None,
    }
    return AllPorts(**(fakes | overrides))

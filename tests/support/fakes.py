"""In-memory fakes of the logic's ports, with DynamoDB's semantics where the logic relies on
them: versioned items, all-or-nothing conditional transactions that fail with
WriteConflict (carrying the kept answer that stood in the way, as ALL_OLD does), and an
idempotency record written only while no live one exists. One :class:`FakeTable` is both
stores (the node store and the terminations store), as the one table is."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Self

from reservations.capacity.writes import ReclaimWrite
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.kernel.settings import expiry_warning_minutes
from reservations.kernel.times import to_millisecond
from reservations.kernel.writes import ItemVersion, WriteConflict
from reservations.nodes.models.partition import (
    ListAccess,
    Node,
    NodeSnapshot,
    OpenTermination,
    Reservation,
    ReservationsRead,
    Termination,
    TerminationState,
    Unit,
    Workload,
    WorkloadState,
    termination_of,
)
from reservations.nodes.models.writes import NodePut, PartitionWrite, TopologyRead
from reservations.nodes.rules.clock import clock_shard, next_moment
from reservations.nodes.rules.history import named_orgs_until, retained_until
from reservations.reservations.writes import (
    ClockFire,
    HistoryMove,
    ReaffirmWrite,
    ReservationChange,
    ReservationCreate,
    ReservationUpdate,
)
from reservations.terminations.models import SendResult, SpotTermination, TerminationReport
from reservations.terminations.writes import TerminationClose
from reservations.workloads.writes import PlacementWrite, WorkloadEnd
from tests.support.ports import AllPorts


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
            tuple(self.reservations.values()),
            tuple(self.workloads.values()),
            tuple(u for u in units if listed is not None and u.id not in listed),
        )


def _retained(reservation: Reservation, days: int = 400) -> Reservation:
    """As the history item is read back: kept ``days`` after it ended."""
    return replace(reservation, retained_until=retained_until(reservation, days))


class FakeTable:
    """Node partitions keyed by node id, the idempotency records, audit and history: the
    node store and the terminations store of ``<slice>.ports``."""

    def __init__(self, now: Callable[[], datetime]) -> None:
        self.nodes: dict[str, NodePartition] = {}
        self.answers: dict[str, AnswerRecord] = {}
        self.audit: list[ReclaimWrite] = []
        self.history: list[TerminationClose] = []
        self.failed_reports: list[TerminationReport] = []  # the ones recorded
        self.placements: list[PlacementWrite] = []
        self.ended: list[WorkloadEnd] = []
        self.changes: list[ReservationChange] = []  # releases and cancels, as committed
        self.created: list[ReservationCreate] = []
        self.updated: list[ReservationUpdate] = []  # PATCHes, as committed
        self.clock_queries = 0  # Queries of the clock's index
        self.page_size = 1000  # reservations one Query returns before its 1 MB limit
        self.node_writes: list[NodePut] = []
        self.reaffirmed: list[ReaffirmWrite] = []
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
        """All or nothing, with the key's record, as ``nodes.table.store.NodeTable.commit``."""
        self.writes += 1
        apply: Callable[[Any], None] = {
            ReclaimWrite: self._reclaim,
            ReservationChange: self._change,
            ReservationCreate: self._create,
            ReservationUpdate: self._update,
            PlacementWrite: self._placement,
            WorkloadEnd: self._workload_end,
            NodePut: self._node_put,
            ReaffirmWrite: self._reaffirm,
            TerminationClose: self._close,
            HistoryMove: self._history_move,
            ClockFire: self._clock_fire,
        }[type(write)]
        stored = self._live_answer(answer)
        if stored is not None:
            raise WriteConflict("ConditionalCheckFailed", stored)
        apply(write)
        self.events.extend(write.events)
        if answer is not None:
            self.answers[answer.request.scope] = answer

    def _reclaim(self, write: ReclaimWrite) -> None:
        partition = self.nodes[write.node_id]
        stale = self._stale_reclaim(partition, write)
        if stale:
            raise WriteConflict("ConditionalCheckFailed")
        self._apply_reclaim(partition, write)
        self.audit.append(write)

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        self.writes += 1
        stored = self._live_answer(answer)
        if stored is None:
            self.answers[answer.request.scope] = answer
        return stored

    def _close(self, closing: TerminationClose) -> None:
        partition = self.nodes[closing.node_id]
        current = partition.workloads.get(closing.workload.id)
        if (
            current is None
            or current.version != closing.workload.version
            or termination_of(current).id != closing.termination_id
            or _stale(partition.units, closing.freed_units)
        ):
            raise WriteConflict("ConditionalCheckFailed")
        del partition.workloads[current.id]
        for unit in closing.freed_units:
            freed = partition.units[unit.id]
            partition.units[unit.id] = replace(freed, claimed_by=None, version=freed.version + 1)
        self.history.append(closing)

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

    def _create(self, write: ReservationCreate) -> None:
        reservation = write.reservation
        partition = self.nodes[reservation.node_id]
        stale = (
            partition.node.version != write.node.version
            or _stale(partition.units, write.units)
            or reservation.id in partition.reservations
        )
        if stale:
            raise WriteConflict("ConditionalCheckFailed")
        partition.node = replace(partition.node, version=partition.node.version + 1)
        partition.reservations[reservation.id] = reservation
        partition.named.update(write.named_until)
        self.created.append(write)

    def _update(self, write: ReservationUpdate) -> None:
        """As ``reservations.table.update``: on the node, the reservation and the added
        units as read; the node's version bumped, the reservation replaced whole."""
        after = write.after
        partition = self.nodes[after.node_id]
        stale = (
            partition.node.version != write.node.version
            or _stale(partition.units, write.units)
            or _stale(partition.reservations, [ItemVersion(after.id, write.before.version)])
            # the clock's place as read (the table's ``clockAt``): a moment fired since
            or partition.reservations[after.id].clock_fired != write.before.clock_fired
        )
        if stale:
            raise WriteConflict("ConditionalCheckFailed")
        partition.node = replace(partition.node, version=partition.node.version + 1)
        partition.reservations[after.id] = after
        partition.named.update(write.named_until)
        self.updated.append(write)

    def load_reservation(
        self, node_id: str, reservation_id: str
    ) -> tuple[Node | None, Reservation | None]:
        self.reads += 1
        partition = self.nodes.get(node_id)
        if partition is None:
            return None, None
        live = partition.reservations.get(reservation_id)
        return partition.node, live or partition.history.get(reservation_id)

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
        return ReservationsRead(access, tuple(read), more)

    def _placement(self, write: PlacementWrite) -> None:
        partition = self.nodes[write.node.id]
        stale = (
            partition.node.version != write.node.version
            or _stale(partition.reservations, write.reservations)
            or _stale(partition.units, write.units)
            or any(partition.units[u.id].claimed_by for u in write.units)
            or write.workload.id in partition.workloads
        )
        if stale:
            raise WriteConflict("ConditionalCheckFailed")
        partition.workloads[write.workload.id] = write.workload
        partition.node = replace(partition.node, placements=partition.node.placements + 1)
        for unit in write.units:
            claimed = partition.units[unit.id]
            partition.units[unit.id] = replace(
                claimed, claimed_by=write.workload.claim, version=claimed.version + 1
            )
        self.placements.append(write)

    def _workload_end(self, end: WorkloadEnd) -> None:
        partition = self.nodes[end.node_id]
        current = partition.workloads.get(end.workload.id)
        stale = (
            current is None
            or current.version != end.workload.version
            or _stale(partition.units, end.freed_units)
        )
        if stale:
            raise WriteConflict("ConditionalCheckFailed")
        del partition.workloads[end.workload.id]
        for unit in end.freed_units:
            freed = partition.units[unit.id]
            partition.units[unit.id] = replace(freed, claimed_by=None, version=freed.version + 1)
        self.ended.append(end)

    def stored_answer(self, scope: str) -> StoredResponse | None:
        self.reads += 1
        kept = self.answers.get(scope)
        if kept is None:
            return None
        return StoredResponse(kept.request.request_hash, kept.outcome, kept.expires_at)

    def _node_put(self, write: NodePut) -> None:
        """A node registered or updated, all or nothing (as ``nodes.table.writes.commit_node``): no
        reservation is written."""
        partition = self.nodes.get(write.node.id)
        if _stale_node(partition, write):
            raise WriteConflict("ConditionalCheckFailed")
        if partition is None:
            partition = self.nodes[write.node.id] = NodePartition(write.node)
        else:
            created = partition.node.created_at or write.at
            placements = partition.node.placements
            partition.node = replace(write.node, created_at=created, placements=placements)
        for put in write.units:
            partition.units[put.unit.id] = put.unit
        for removed in (*write.removed, *write.leftovers):
            del partition.units[removed.id]
        self.node_writes.append(write)

    def _reaffirm(self, write: ReaffirmWrite) -> None:
        """A reservation out of review, conditioned on it and on the node item."""
        partition = self.nodes[write.node_id]
        stale = partition.node.version != write.node.version or _stale(
            partition.reservations, [write.reservation]
        )
        reservation = partition.reservations.get(write.reservation.id)
        # the clock's place as read (the table's ``clockAt``): a moment fired since the
        # read is one the write does not carry
        if write.clock is not None and reservation is not None:
            stale = stale or not set(reservation.clock_fired) <= set(write.clock.clock_fired)
        if stale or reservation is None:
            raise WriteConflict("ConditionalCheckFailed")
        partition.reservations[reservation.id] = replace(
            reservation,
            clock_fired=reservation.clock_fired if write.clock is None else write.clock.clock_fired,
            status=write.status,
            topology_gen=write.topology_gen,
            released_unit_ids=(),
            updated_at=write.at,
            version=reservation.version + 1,
        )
        self.reaffirmed.append(write)

    def _change(self, change: ReservationChange) -> None:
        partition = self.nodes[change.node_id]
        names = bool(change.named_until) and change.node_version is not None
        stale = (
            _stale(partition.reservations, [change.reservation, *change.named_deciding])
            or (names and partition.node.version != change.node_version)
            or (not names and _moved(partition, change.topology))
        )
        if stale:
            raise WriteConflict("ConditionalCheckFailed")
        reservation = partition.reservations[change.reservation.id]
        if change.ended is not None:  # a cancel: out to the node's history
            del partition.reservations[reservation.id]
            partition.history[reservation.id] = _retained(change.ended)
            partition.named.update(change.named_until if names else {})
        else:
            partition.reservations[reservation.id] = change.applied_to(reservation)
        self.changes.append(change)

    def _history_move(self, move: HistoryMove) -> None:
        reservation = move.reservation
        partition = self.nodes[reservation.node_id]
        if _stale(partition.reservations, [ItemVersion(reservation.id, reservation.version)]):
            raise WriteConflict("ConditionalCheckFailed")
        if partition.reservations[reservation.id].clock_fired != reservation.clock_fired:
            raise WriteConflict("ConditionalCheckFailed")
        del partition.reservations[reservation.id]
        partition.history[reservation.id] = _retained(reservation)

    def _clock_fire(self, fire: ClockFire) -> None:
        """As the table: where the reservation is as read (version and moments fired) and,
        for an activation, the node's topology as read; the version stays."""
        read = fire.read
        partition = self.nodes[read.node_id]
        stored = partition.reservations.get(read.id)
        if stored is None or (stored.version, stored.clock_fired) != (
            read.version,
            read.clock_fired,
        ):
            raise WriteConflict("ConditionalCheckFailed")
        if fire.topology is not None and partition.node.topology_gen != fire.topology.topology_gen:
            raise WriteConflict("ConditionalCheckFailed")
        partition.reservations[read.id] = replace(stored, clock_fired=fire.after.clock_fired)

    def due_clock(self, shard: str, now: datetime, page: int) -> list[tuple[str, str]]:
        """The clock index's partition (here it never lags): due first, at most ``page``."""
        self.clock_queries += 1
        warning = expiry_warning_minutes()
        due = []
        for partition in list(self.nodes.values()):
            for reservation in partition.reservations.values():
                moment = next_moment(reservation, warning)
                if moment is not None and moment.at <= now and clock_shard(reservation.id) == shard:
                    due.append((moment.key, reservation))
        ordered = [r for _, r in sorted(due, key=lambda pair: pair[0])][:page]
        return [(r.node_id, r.id) for r in ordered]

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
                    yield reservation

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

    @staticmethod
    def _stale_reclaim(partition: NodePartition, write: ReclaimWrite) -> bool:
        workloads = [t.workload for t in write.terminations] + list(write.unchanged_workloads)
        workloads += [change.workload for change in write.deadline_changes]
        return (
            _moved(partition, write.topology)
            or _stale(partition.reservations, [write.reservation])
            or _stale(partition.units, write.units)
            or _stale(partition.workloads, workloads)
        )

    @staticmethod
    def _apply_reclaim(partition: NodePartition, write: ReclaimWrite) -> None:
        reservation = partition.reservations[write.reservation.id]
        if write.released_after is not None:
            partition.reservations[reservation.id] = replace(
                reservation,
                released_unit_ids=write.released_after,
                updated_at=write.at,
                version=reservation.version + 1,
            )
        for termination in write.terminations:
            workload = partition.workloads[termination.workload.id]
            partition.workloads[workload.id] = replace(
                workload,
                state=WorkloadState.TERMINATING,
                termination=Termination(
                    termination.termination_id,
                    write.reservation.id,
                    write.reason,
                    to_millisecond(write.at),  # as the table stores it
                    write.managing_org_ids,
                    terminate_at=to_millisecond(termination.terminate_at or write.at),
                ),
                version=workload.version + 1,
            )
        for change in write.deadline_changes:
            workload = partition.workloads[change.workload.id]
            partition.workloads[workload.id] = replace(
                workload,
                termination=replace(
                    termination_of(workload),
                    terminate_at=to_millisecond(change.terminate_at),
                    deadline_changes=change.changes,
                    deliveries=0,
                    last_delivered_at=None,
                    stuck_at=None,
                    reported_deliveries=0,
                    last_reported_at=None,
                    failed_reports=0,
                ),
                version=workload.version + 1,
            )


def _stale(items: dict[str, object], read: Sequence[ItemVersion]) -> bool:
    """Any item missing, or not at the version read (DynamoDB's ``version = :v``)."""
    return any(getattr(items.get(i.id), "version", None) != i.version for i in read)


def _moved(partition: NodePartition, read: TopologyRead) -> bool:
    """The node's topology generation no longer as read (a node update since)."""
    return partition.node.topology_gen != read.topology_gen


def _stale_node(partition: NodePartition | None, write: NodePut) -> bool:
    """The node absent when read and now there, or not at the version and placement count
    read; any unit the write decided from no longer as read."""
    if partition is None:
        return write.node_read is not None or any(p.read is not None for p in write.units)
    node = partition.node
    if node.version != write.node_read or node.placements != write.placements_read:
        return True
    for put in write.units:
        current = partition.units.get(put.unit.id)
        if (current.version if current else None) != put.read:
            return True
    return _stale(partition.units, [*write.removed, *write.leftovers])


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

"""What the use cases need from the world, as Protocols: the functions wire the DynamoDB and
SQS implementations (``dal``), the logic tests in-memory fakes."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from reservations.models.changes import ReservationChange
from reservations.models.domain import (
    Node,
    NodeSnapshot,
    OpenTermination,
    Reservation,
    ReservationsRead,
    Workload,
)
from reservations.models.idempotency import AnswerRecord, StoredResponse
from reservations.models.messages import SendResult, SpotTermination, TerminationReport
from reservations.models.writes import (
    NodeWrite,
    PlacementWrite,
    ReaffirmWrite,
    ReclaimWrite,
    ReservationCreate,
    TerminationClose,
    WorkloadEnd,
)

Clock = Callable[[], datetime]
# (queue URL, messages) -> the termination ids the queue accepted; never raises.
BatchSender = Callable[[str, Sequence[SpotTermination]], set[str]]
# (queue URL, message, de-duplication id) -> what the queue made of it.
Sender = Callable[[str, SpotTermination, str], SendResult]


class NodeReader(Protocol):
    """One node's partition, read strongly consistent: None for an unknown node."""

    def load_node(self, node_id: str) -> NodeSnapshot | None: ...


class ReclaimStore(NodeReader, Protocol):
    """The reclaim's writes: one conditional transaction, and a kept refusal."""

    def commit_reclaim(self, write: ReclaimWrite, answer: AnswerRecord | None) -> None:
        """All or nothing; WriteConflict (with the kept answer that stood in the way, if any)."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""


class ReportStore(NodeReader, Protocol):
    """Closing a reported termination: one conditional transaction; recording a failed
    report: one conditional write."""

    def close_termination(self, closing: TerminationClose) -> None:
        """All or nothing; WriteConflict when any item changed since it was read."""

    def record_failed_report(self, report: TerminationReport, at: datetime) -> Workload | None:
        """On the workload still terminating under the report's termination id: the
        deliveries made so far as the reported ones, ``at``, one more failed report, and
        back to "open" if it was stuck. The workload as it was before; None, with nothing
        written, when no such termination is open."""


class Outbox(Protocol):
    """Where open terminations and their delivery records live."""

    def listed(self, partition: str) -> Iterator[OpenTermination]: ...
    def read(self, node_id: str, workload_id: str) -> OpenTermination | None: ...
    def node_queue_url(self, node_id: str) -> str | None: ...
    def record_delivery(self, termination: OpenTermination, now: datetime) -> None: ...
    def mark_stuck(self, termination: OpenTermination, now: datetime) -> bool: ...


@dataclass(frozen=True)
class ReclaimPorts:
    """Everything a reclaim touches: the table, the node queues, the clock, the backoff."""

    store: ReclaimStore
    send: BatchSender
    clock: Clock
    sleep: Callable[[float], None] = time.sleep


class CreateStore(NodeReader, Protocol):
    """A create's writes: one conditional transaction, and a kept refusal."""

    def commit_create(self, write: ReservationCreate, answer: AnswerRecord | None) -> None:
        """All or nothing; WriteConflict (with the kept answer that stood in the way, if any)."""

    def stored_answer(self, scope: str) -> StoredResponse | None:
        """The record kept under this scope, if any (live or not)."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""


class ReservationReader(Protocol):
    """Reservations as the reads answer them: one at a time, or a page of a node's."""

    def load_reservation(
        self, node_id: str, reservation_id: str
    ) -> tuple[Node | None, Reservation | None]: ...

    def reservation_page(self, node_id: str, after: str | None) -> ReservationsRead: ...


@dataclass(frozen=True)
class CreatePorts:
    """Everything a create touches: the table, the clock, the backoff, the id source."""

    store: CreateStore
    clock: Clock
    new_id: Callable[[], str]
    sleep: Callable[[float], None] = time.sleep


class ChangeStore(NodeReader, Protocol):
    """A release's or a cancel's writes: one conditional transaction, and a kept refusal."""

    def commit_change(self, change: ReservationChange, answer: AnswerRecord | None) -> None:
        """All or nothing; WriteConflict (with the kept answer that stood in the way, if any)."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""


@dataclass(frozen=True)
class ChangePorts:
    """Everything a release or a cancel touches: the table, the clock, the backoff."""

    store: ChangeStore
    clock: Clock
    sleep: Callable[[float], None] = time.sleep


class WorkloadStore(NodeReader, Protocol):
    """The scheduler's writes: a placement and a workload's end, each one conditional
    transaction, and a kept refusal."""

    def commit_placement(self, write: PlacementWrite, answer: AnswerRecord | None) -> None:
        """All or nothing; WriteConflict (with the kept answer that stood in the way, if any)."""

    def commit_workload_end(self, end: WorkloadEnd, answer: AnswerRecord | None) -> None:
        """All or nothing; WriteConflict (with the kept answer that stood in the way, if any)."""

    def stored_answer(self, scope: str) -> StoredResponse | None:
        """The record kept under this scope, if any (live or not)."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""


@dataclass(frozen=True)
class WorkloadPorts:
    """Everything the scheduler's calls touch: the table, the clock, the id source, the
    backoff."""

    store: WorkloadStore
    clock: Clock
    new_id: Callable[[], str]
    sleep: Callable[[float], None] = time.sleep


# node id -> the node's spot-termination queue URL, made if missing (idempotent).
QueueMaker = Callable[[str], str]


class NodeStore(NodeReader, Protocol):
    """A node registered or updated: one conditional write."""

    def commit_node(self, write: NodeWrite) -> None:
        """All or nothing; WriteConflict when an item is no longer as read."""


class ReaffirmStore(NodeReader, Protocol):
    """A reviewed reservation confirmed: one conditional write, and a kept refusal."""

    def commit_reaffirm(self, write: ReaffirmWrite, answer: AnswerRecord | None) -> None:
        """All or nothing; WriteConflict (with the kept answer that stood in the way, if any)."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""


@dataclass(frozen=True)
class NodePorts:
    """Everything a node registration touches: the table, the queue maker, the clock."""

    store: NodeStore
    make_queue: QueueMaker
    clock: Clock
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class ReaffirmPorts:
    """Everything a re-affirm touches: the table, the clock, the backoff."""

    store: ReaffirmStore
    clock: Clock
    sleep: Callable[[float], None] = time.sleep

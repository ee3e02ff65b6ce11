"""The reservations table behind the logic's store ports (the one DynamoDB implementation)."""

from __future__ import annotations

from datetime import datetime

from reservations.dal import (
    changes,
    idempotency,
    nodes,
    reclaim,
    reservations,
    store,
    terminations,
    workloads,
)
from reservations.models.changes import ReservationChange
from reservations.models.domain import Node, NodeSnapshot, Reservation, ReservationsRead, Workload
from reservations.models.idempotency import AnswerRecord, StoredResponse
from reservations.models.messages import TerminationReport
from reservations.models.writes import (
    NodeWrite,
    PlacementWrite,
    ReaffirmWrite,
    ReclaimWrite,
    ReservationCreate,
    TerminationClose,
    WorkloadEnd,
)


class NodeTable:
    """Node partitions and the writes on them; clients are made on first use, not here."""

    def load_node(self, node_id: str) -> NodeSnapshot | None:
        return store.load_node(node_id)

    def commit_reclaim(self, write: ReclaimWrite, answer: AnswerRecord | None) -> None:
        reclaim.commit_reclaim(write, answer)

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        return idempotency.keep_answer(answer)

    def close_termination(self, closing: TerminationClose) -> None:
        terminations.close_termination(closing)

    def record_failed_report(self, report: TerminationReport, at: datetime) -> Workload | None:
        return terminations.record_failed_report(report, at)

    def commit_create(self, write: ReservationCreate, answer: AnswerRecord | None) -> None:
        reservations.commit_create(write, answer)

    def load_reservation(
        self, node_id: str, reservation_id: str
    ) -> tuple[Node | None, Reservation | None]:
        return reservations.load_reservation(node_id, reservation_id)

    def reservation_page(self, node_id: str, after: str | None) -> ReservationsRead:
        return reservations.reservation_page(node_id, after)

    def commit_placement(self, write: PlacementWrite, answer: AnswerRecord | None) -> None:
        workloads.commit_placement(write, answer)

    def commit_workload_end(self, end: WorkloadEnd, answer: AnswerRecord | None) -> None:
        workloads.commit_workload_end(end, answer)

    def commit_change(self, change: ReservationChange, answer: AnswerRecord | None) -> None:
        changes.commit_change(change, answer)

    def commit_node(self, write: NodeWrite) -> None:
        nodes.commit_node(write)

    def commit_reaffirm(self, write: ReaffirmWrite, answer: AnswerRecord | None) -> None:
        nodes.commit_reaffirm(write, answer)

    def stored_answer(self, scope: str) -> StoredResponse | None:
        return idempotency.stored_answer(scope)

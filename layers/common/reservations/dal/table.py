"""The reservations table behind the logic's store ports (the one DynamoDB implementation)."""

from __future__ import annotations

from reservations.dal import idempotency, reclaim, store, terminations
from reservations.models.domain import NodeSnapshot
from reservations.models.idempotency import AnswerRecord, StoredResponse
from reservations.models.writes import ReclaimWrite, TerminationClose


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

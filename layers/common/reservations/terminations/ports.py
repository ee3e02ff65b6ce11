"""What the terminations slice needs from the world: the open terminations
(``terminations.table.store.TerminationTable``), the node's queue to send a message to, and
the node store a report's close is written through."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from reservations.kernel.envelope import StoredEvent
from reservations.nodes import NodePorts, TerminationState, Workload
from reservations.terminations.models import (
    OpenTermination,
    SendResult,
    SpotTermination,
    TerminationReport,
)


class BatchSender(Protocol):
    """(queue URL, messages) -> the termination ids the queue accepted; never raises. A
    message named in ``deduplication_ids`` / ``group_ids`` is sent under those (a moved
    deadline's), the others under their termination id and their workload's group."""

    def __call__(
        self,
        queue_url: str,
        messages: Sequence[SpotTermination],
        deduplication_ids: Mapping[str, str] | None = None,
        group_ids: Mapping[str, str] | None = None,
    ) -> set[str]: ...


class Sender(Protocol):
    """(queue URL, message, de-duplication id, group: the workload's when None) -> what the
    queue made of it."""

    def __call__(
        self,
        queue_url: str,
        message: SpotTermination,
        deduplication_id: str,
        *,
        group_id: str | None = None,
    ) -> SendResult: ...


class TerminationStore(Protocol):
    """Open terminations: the sparse index, their delivery record, a node's failed reports."""

    def listed(self, state: TerminationState) -> Iterator[OpenTermination]: ...
    def read(self, node_id: str, workload_id: str) -> OpenTermination | None: ...
    def node_queue_url(self, node_id: str) -> str | None: ...
    def record_delivery(self, termination: OpenTermination, now: datetime) -> None: ...
    def node_owner(self, node_id: str) -> str | None: ...

    def mark_stuck(self, termination: OpenTermination, now: datetime, stuck: StoredEvent) -> bool:
        """Flag it stuck, with its ``workload.termination_stuck`` event in the same
        transaction; False, with nothing written, when it is no longer open or its node
        answered since it was read."""

    def record_failed_report(self, report: TerminationReport, at: datetime) -> Workload | None:
        """On the workload still terminating under the report's termination id: the
        deliveries made so far as the reported ones, ``at``, one more failed report, and
        back to "open" if it was stuck. The workload as it was before; None, with nothing
        written, when no such termination is open."""


@dataclass(frozen=True, kw_only=True)
class TerminationPorts(NodePorts):
    """The open terminations and the single send (the sweeper's, a report's)."""

    terminations: TerminationStore
    send_termination: Sender

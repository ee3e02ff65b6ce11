"""What the use cases need from the world: two stores as Protocols and the :class:`Ports`
every function hands its use cases. The functions wire the DynamoDB and SQS implementations
(``dal``: ``NodeTable``, ``TerminationTable``, the queues), the logic tests the in-memory
fakes of ``tests/support/fakes.py``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from reservations.kernel.envelope import StoredEvent
from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
    OpenTermination,
    Reservation,
    ReservationsRead,
    TerminationState,
    Workload,
)
from reservations.nodes.models.writes import PartitionWrite
from reservations.terminations.models import SendResult, SpotTermination, TerminationReport
from reservations.webhooks.models.api import HookWrite, OrgHooks
from reservations.webhooks.models.domain import (
    Delivery,
    DeliveryAttempt,
    DeliveryRequest,
    Subscription,
    new_secret,
)

Clock = Callable[[], datetime]
# (queue URL, messages) -> the termination ids the queue accepted; never raises.
BatchSender = Callable[[str, Sequence[SpotTermination]], set[str]]
# (queue URL, message, de-duplication id) -> what the queue made of it.
Sender = Callable[[str, SpotTermination, str], SendResult]
# node id -> the node's spot-termination queue URL, made if missing (idempotent).
QueueMaker = Callable[[str], str]


class NodeStore(Protocol):
    """A node's partition: read strongly consistent, written one conditional transaction at
    a time, with the Idempotency-Key's records beside it."""

    def load_node(self, node_id: str) -> NodeSnapshot | None:
        """Everything the writes decide from; None for an unknown node."""

    def load_reservation(
        self, node_id: str, reservation_id: str
    ) -> tuple[Node | None, Reservation | None]:
        """The node and one of its reservations (None for either that is not there)."""

    def reservation_page(
        self, node_id: str, after: str | None, history: bool = False, limit: int = 100
    ) -> ReservationsRead:
        """A page of the node's reservations after ``after``, with its list access: those
        in the node's partition, or with ``history`` those and its history, in one order
        (then a bounded read, at least ``limit`` + 1 of them, ``more`` when it stopped)."""

    def load_ended(self, node_id: str, reservation_id: str) -> Reservation | None:
        """One reservation of the node's history (retained or not), if it is there."""

    def due_moves(self, now: datetime) -> Iterator[Reservation]:
        """Reservations still in a node's partition past their ``endsAt``, as listed."""

    def prune_named(self, node_id: str, now: datetime) -> int:
        """The orgs the node's list access names no more at ``now`` taken out (how many)."""

    def commit(self, write: PartitionWrite, answer: AnswerRecord | None = None) -> None:
        """All or nothing, with the key's record when there is one; WriteConflict (with the
        live record that stood in the way, if any) when anything it read changed."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""

    def stored_answer(self, scope: str) -> StoredResponse | None:
        """The record kept under this scope, if any (live or not)."""


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


class SubscriptionStore(Protocol):
    """An org's webhook subscriptions (``ORGHOOK#<org>``): read strongly consistent, with
    the counter the writes are conditioned on, and written one transaction at a time with
    the Idempotency-Key's records beside it."""

    def load_hooks(self, org_id: str) -> OrgHooks:
        """Every subscription of the org (at most 10) and its counter."""

    def load_subscription(self, org_id: str, subscription_id: str) -> Subscription | None:
        """One of the org's subscriptions; None when the org has none of that id."""

    def commit(self, write: HookWrite, answer: AnswerRecord | None = None) -> None:
        """All or nothing; WriteConflict when the counter or the subscription changed."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None: ...
    def stored_answer(self, scope: str) -> StoredResponse | None: ...

    def load_delivery(self, subscription_id: str, event_id: str) -> Delivery | None:
        """One event's delivery to the subscription, where it stands."""

    def attempts_page(
        self, subscription_id: str, before: str | None, count: int
    ) -> list[DeliveryAttempt]:
        """Up to ``count`` attempts, newest first, from before the position ``before``."""


# Puts one delivery request on the webhook delivery queue; raises when it is not taken.
DeliveryQueuer = Callable[[DeliveryRequest], None]


def _new_id() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class Ports:
    """Everything a function's use cases touch: the node stores, the node queues (a
    reclaim's batch send, the sweeper's single send, a registration's queue), an org's
    webhooks, the clock, the id and secret sources and the backoff's sleep."""

    store: NodeStore
    terminations: TerminationStore
    clock: Clock
    send_terminations: BatchSender
    send_termination: Sender
    make_queue: QueueMaker
    webhooks: SubscriptionStore
    queue_delivery: DeliveryQueuer
    new_id: Callable[[], str] = field(default=_new_id)
    new_secret: Callable[[], str] = field(default=new_secret)
    sleep: Callable[[float], None] = field(default=time.sleep)

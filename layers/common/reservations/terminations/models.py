"""The messages between the API and the nodes (docs/messages.md), what a send made of one,
and a terminating workload as the outbox holds it.

The wire models are defined once, in the ``termination_messages`` package that the node
agent ships too (``agent/termination_messages``; the layer's build copies it in), so the
message the API writes is by construction the one the agent reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from reservations.nodes import Termination, Workload, termination_of
from termination_messages import SpotTermination, TerminationReport

__all__ = ["OpenTermination", "SendResult", "SpotTermination", "TerminationReport"]


class SendResult(StrEnum):
    """What a queue made of one send: only ``ACCEPTED`` is a delivery."""

    ACCEPTED = "accepted"
    NO_QUEUE = "no_queue"
    FAILED = "failed"


@dataclass(frozen=True)
class OpenTermination:
    """A terminating workload as the outbox holds it: the message and its delivery record."""

    node_id: str
    workload: Workload

    @property
    def termination_id(self) -> str:
        return self.termination.id

    @property
    def termination(self) -> Termination:
        """The workload's termination (an open one always has one)."""
        return termination_of(self.workload)

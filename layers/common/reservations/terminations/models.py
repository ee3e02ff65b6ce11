"""The messages between the API and the nodes (docs/messages.md), and what a send made of one.

The wire models are defined once, in the ``termination_messages`` package that the node
agent ships too (``agent/termination_messages``; the layer's build copies it in), so the
message the API writes is by construction the one the agent reads.
"""

from __future__ import annotations

from enum import StrEnum

from termination_messages import SpotTermination, TerminationReport

__all__ = ["SendResult", "SpotTermination", "TerminationReport"]


class SendResult(StrEnum):
    """What a queue made of one send: only ``ACCEPTED`` is a delivery."""

    ACCEPTED = "accepted"
    NO_QUEUE = "no_queue"
    FAILED = "failed"

"""What the capacity slice needs from the world besides the node store: the batch send of a
reclaim's terminations to the node's queue."""

from __future__ import annotations

from dataclasses import dataclass

from reservations.nodes import NodePorts
from reservations.terminations import BatchSender


@dataclass(frozen=True, kw_only=True)
class CapacityPorts(NodePorts):
    """The node store and the reclaim's batch send."""

    send_terminations: BatchSender

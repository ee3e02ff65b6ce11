"""What the workloads slice needs from the world besides the node store: the batch send of
the terminations a placement's take-back opens, to the node's queue."""

from __future__ import annotations

from dataclasses import dataclass

from reservations.nodes import NodePorts
from reservations.terminations import BatchSender


@dataclass(frozen=True, kw_only=True)
class WorkloadPorts(NodePorts):
    """The node store and the take-back's batch send."""

    send_terminations: BatchSender

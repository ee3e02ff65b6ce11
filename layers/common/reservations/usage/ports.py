"""What counting usage reads: a node's events (its feed, and the records of its loads from a
fleet file), and which nodes an org's reservations are on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from reservations.kernel.caller import Caller


class NodeHistory(Protocol):  # pragma: no mutate block
    def node_events(self, node_id: str) -> Sequence[Mapping[str, Any]]:
        """Every event of the node's feed still kept, and a ``node.loaded`` fact for each
        load of the node from a fleet file: any order, an event possibly twice."""


class OrgNodes(Protocol):  # pragma: no mutate block
    def __call__(self, caller: Caller) -> frozenset[str]:
        """The nodes of every reservation the caller's org may see, live or ended (the
        operator: every reservation's)."""

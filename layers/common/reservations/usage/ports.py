"""What counting usage reads and keeps: a node's events by time (its feed, and the records
of its loads from a fleet file), its checkpoints, and which nodes an org's reservations are
on."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from reservations.kernel.caller import Caller
from reservations.usage.rules.ledger import Carried


class NodeHistory(Protocol):  # pragma: no mutate block
    def node_history(
        self, node_id: str, since: int | None, end: int
    ) -> Sequence[Mapping[str, Any]]:
        """The node's events still kept whose ``time`` is at or after ``since`` (from the
        first, for None) and before ``end`` (ms), and a ``node.loaded`` fact for each load
        of the node from a fleet file then: any order, an event possibly twice."""

    def checkpoint(self, node_id: str, at_or_before: int) -> Carried | None:
        """The node's latest checkpoint at or before the instant (ms), if any."""


class Checkpoints(NodeHistory, Protocol):  # pragma: no mutate block
    def put_checkpoint(self, carried: Carried, retention_days: int) -> None:
        """Keep the fold carried to its instant for ``retention_days`` after it."""


class OrgNodes(Protocol):  # pragma: no mutate block
    def __call__(
        self, caller: Caller, ends_after: datetime, from_node: str, reserved: bool
    ) -> Iterable[str]:
        """In id order from ``from_node`` on: the nodes the caller's org owns (the
        operator: every node), and when ``reserved``, those of every reservation its fleet
        index lists that ends at or after ``ends_after`` or never, live or ended (a
        reservation that ended before then governed nothing since). A superset: who sees
        which row is decided when the node is read. Read as far as they are taken."""

"""The usage slice's real ports: the node table's reservation reads, the feeds' events and
loads, and the fleet index for the nodes an org owns and those its reservations are on."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.clock import utc_now
from reservations.kernel.ports import Ports
from reservations.lifecycle import FleetIndexTable, indexed_nodes
from reservations.nodes import node_table
from reservations.usage.read import UsageReads
from reservations.usage.table import UsageTable


class FleetNodes:
    """The nodes whose rows an org may see something of, in id order: those it owns (the
    fleet index's node list, read from the page's first node on, only as far as the page
    goes; the operator's lists every node), and for rows by reservation the nodes of the
    reservations its fleet index lists that end at or after the page's first period or
    never (every status and role; the index is sorted by end, so a reservation that ended
    before the period is not read), from the index's entries alone."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._index = FleetIndexTable()
        self._clock = clock

    def __call__(
        self, caller: Caller, ends_after: datetime, from_node: str, reserved: bool
    ) -> Iterable[str]:
        owner = None if caller.platform_operator else caller.org_id
        owned = self._index.owned_nodes(owner, from_node)
        if owner is None or not reserved:
            return owned
        others = indexed_nodes(owner, ends_after, self._index, self._clock())
        return sorted({*owned, *(node for node in others if node >= from_node)})


def usage_reads(clock: Callable[[], datetime]) -> UsageReads:
    return UsageReads(
        history=UsageTable(),
        reservations=node_table(),
        org_nodes=FleetNodes(clock),
    )


def usage_ports() -> Ports:
    return Ports(clock=utc_now)

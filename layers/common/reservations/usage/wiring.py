"""The usage slice's real ports: the node table's reservation reads, the feeds' events and
loads, and the fleet index for the nodes an org owns and those its reservations are on."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from reservations.kernel.caller import Caller
from reservations.kernel.clock import utc_now
from reservations.kernel.ports import Ports
from reservations.kernel.times import format_time
from reservations.lifecycle import FleetIndexTable, FleetQuery, list_fleet_reservations
from reservations.nodes import READ, node_table
from reservations.usage.read import UsageReads
from reservations.usage.table import UsageTable

# Every status, live and ended: usage counts a reservation's past as well as its present.
_EVERY_STATUS = "pending,active,needs-review,expired,cancelled"
_PAGE = "100"


class FleetNodes:
    """The nodes whose rows an org may see something of, in id order: those it owns (the
    fleet index's node list, read from the page's first node on, only as far as the page
    goes; the operator's lists every node), and for rows by reservation the nodes of the
    reservations it may see across the fleet that end at or after the page's first period
    or never, from the fleet list's own pages (every status; the index is sorted by end, so
    a reservation that ended before the period is not read)."""

    def __init__(self, signing_key: bytes) -> None:
        self._index = FleetIndexTable()
        self._signing_key = signing_key

    def __call__(
        self, caller: Caller, ends_after: datetime, from_node: str, reserved: bool
    ) -> Iterable[str]:
        owner = None if caller.platform_operator else caller.org_id
        owned = self._index.owned_nodes(owner, from_node)
        if owner is None or not reserved:
            return owned
        others = self._reserved(caller, format_time(ends_after))
        return sorted({*owned, *(node for node in others if node >= from_node)})

    def _reserved(self, caller: Caller, ends_after: str) -> frozenset[str]:
        # The fleet list reads for a key with reservation.read; usage asks it for the org's
        # reservations as the org would see them with it, whatever its own key holds.
        reader = replace(caller, permissions=caller.permissions | {READ})
        nodes: set[str] = set()
        cursor: str | None = None
        while True:
            query = FleetQuery(status=_EVERY_STATUS, ends_after=ends_after, limit=_PAGE,
                               cursor=cursor)  # fmt: skip
            page = list_fleet_reservations(reader, query, self._index, self._signing_key,
                                           utc_now())  # fmt: skip
            nodes.update(item.node_id for item in page.items)
            if page.next_cursor is None:
                return frozenset(nodes)
            cursor = page.next_cursor


def usage_reads(signing_key: bytes) -> UsageReads:
    return UsageReads(
        history=UsageTable(),
        reservations=node_table(),
        org_nodes=FleetNodes(signing_key),
    )


def usage_ports() -> Ports:
    return Ports(clock=utc_now)

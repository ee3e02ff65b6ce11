"""A call's reads of its node, for the calls whose callers are settled by the node's data:
besides the operator, the node's owner (create, cancel) or this reservation's managers
(release, reclaim). Whether the caller may is settled by the first read, before the body is
parsed, so a caller of another org hears the one 404 before any 400 (the contract's order:
an org that may not make this call on this node is a 404 before the body). That read
serves the call's first attempt, so the call still costs what it did."""

from __future__ import annotations

from collections.abc import Callable

from reservations.logic.ports import NodeReader
from reservations.models.domain import Caller, NodeSnapshot
from reservations.models.errors import NotFound


def checked_reads(
    caller: Caller, node_id: str, store: NodeReader, may: Callable[[NodeSnapshot], bool]
) -> Callable[[], NodeSnapshot | None]:
    """The node's reads, one per attempt. The operator may act on any node: its first read
    waits for the first attempt. Anyone else's is made now, and ``may`` must hold on it
    (else the one 404)."""
    pending: list[NodeSnapshot] = []
    if not caller.platform_operator:
        first = store.load_node(node_id)
        if first is None or not may(first):
            raise NotFound()
        pending.append(first)
    return lambda: pending.pop() if pending else store.load_node(node_id)

"""A call's reads of its node, for the calls only the operator or the node's owner may make
(create, cancel). Whether the caller may is settled by the first read, before the body is
parsed, so a caller of another org hears the one 404 before any 400 (the contract's order:
an org that may not make this call on this node is a 404 before the body). That read
serves the call's first attempt, so the call still costs one Query."""

from __future__ import annotations

from collections.abc import Callable

from reservations.logic.ports import NodeReader
from reservations.models.domain import Caller, NodeSnapshot
from reservations.models.errors import NotFound
from reservations.rules.access import may_write_reservations


def owner_checked_reads(
    caller: Caller, node_id: str, store: NodeReader
) -> Callable[[], NodeSnapshot | None]:
    """The node's reads, one per attempt; the operator's first read waits for the first
    attempt (the operator may act on any node), anyone else's is made now and must show the
    caller's org owning the node (else 404)."""
    pending: list[NodeSnapshot] = []
    if not caller.platform_operator:
        first = store.load_node(node_id)
        if first is None or not may_write_reservations(caller, first):
            raise NotFound()
        pending.append(first)
    return lambda: pending.pop() if pending else store.load_node(node_id)

"""``GET /v1/nodes/{nodeId}``, ``GET /v1/nodes/{nodeId}/workloads`` and
``GET /v1/nodes/{nodeId}/workloads/{workloadId}``: a node and its workloads as a caller may
see them.

The node is one GetItem (its item keeps its units' ids; an item from before it did has its
units read with one Query more). One workload is one BatchGetItem (the node item, for its
owner, and the workload); one not on the node, one Query more for its latest life in the
node's history (ended, or reported stopped), answered ``ended`` while it is retained. The
list is the node's present (no ended workload): a page is one Query over the node's live
workloads up to its list access item, which sorts after them and names the owner: a node
has at most 64 units, so at most 64 live workloads, and every page reads them all. Who may
list, and whether they see any workload at all, is so decided over the whole node on every
page, never carried in the cursor; the cursor only says where the page starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from reservations.kernel.caller import Caller
from reservations.kernel.cursors import (
    Cursor,
    CursorScope,
    decode_cursor,
    encode_cursor,
    page_limit,
)
from reservations.kernel.errors import FieldProblem, InvalidRequest, NotFound
from reservations.kernel.ids import is_resource_id
from reservations.nodes.ids import is_workload_id
from reservations.nodes.models.partition import Node, Workload
from reservations.nodes.models.reads import EndedWorkload, WorkloadsRead
from reservations.nodes.models.views import NodeView, WorkloadPage, WorkloadView
from reservations.nodes.rules.access import READ, runs_the_node
from reservations.nodes.views import ended_workload_view, node_view, read_workload_view

STATES = ("running", "terminating", "waiting")
WORKLOAD_FEED = "workloads"  # binds a cursor to this list (no other list's cursor reads)


class NodeReader(Protocol):
    def node(self, node_id: str) -> Node | None: ...
    def unit_ids(self, node_id: str) -> list[str]: ...
    def workload(self, node_id: str, workload_id: str) -> tuple[Node | None, Workload | None]: ...
    def ended_workload(self, node_id: str, workload_id: str) -> EndedWorkload | None: ...
    def workloads(self, node_id: str) -> WorkloadsRead: ...


@dataclass(frozen=True)
class WorkloadQuery:
    """The list's query string as it came; a part given empty (``state=``) is absent."""

    limit: str | None = None
    cursor: str | None = None
    state: str | None = None


def get_node(caller: Caller, node_id: str, reader: NodeReader, now: datetime) -> NodeView:
    """The node as PUT answers it, for the operator and its owner; anyone else the 404."""
    if not (is_resource_id(node_id) and caller.has(READ)):
        raise NotFound()
    node = reader.node(node_id)
    if node is None or not runs_the_node(caller, node.owner_org_id):
        raise NotFound()
    units = node.unit_changed_at
    return node_view(node, list(units) if units is not None else reader.unit_ids(node_id), now)


def get_workload(
    caller: Caller, node_id: str, workload_id: str, reader: NodeReader, now: datetime
) -> WorkloadView:
    """The workload, for the operator, the node's owner and the workload's own org: the live
    one, else its latest life in the node's history while retained (``ended``, with its own
    use); the same 404 for unknown, malformed, expired and not visible."""
    if not (is_resource_id(node_id) and is_workload_id(workload_id) and caller.has(READ)):
        raise NotFound()
    node, workload = reader.workload(node_id, workload_id)
    if node is None:
        raise NotFound()
    if workload is not None:
        if not _sees(caller, node.owner_org_id, workload):
            raise NotFound()
        return read_workload_view(node_id, workload)
    ended = reader.ended_workload(node_id, workload_id)
    if ended is None or not ended.retained_at(now):
        raise NotFound()
    if not _sees(caller, node.owner_org_id, ended.workload):
        raise NotFound()
    return ended_workload_view(node_id, ended.workload, ended.use)


def list_workloads(
    caller: Caller, node_id: str, query: WorkloadQuery, reader: NodeReader, cursor_key: bytes
) -> WorkloadPage:
    """A page of the node's workloads the caller may see, sorted by id; 404 when it may see
    none of them (never an empty first page for a stranger)."""
    if not is_resource_id(node_id) or not caller.has(READ):
        raise NotFound()
    limit, states = page_limit(query.limit), _states(query.state or None)
    scope = CursorScope(node_id, ",".join(sorted(states)), caller.org_id, WORKLOAD_FEED)
    after = decode_cursor(query.cursor, scope, cursor_key).after if query.cursor else ""
    read = reader.workloads(node_id)
    if read.access is None:
        raise NotFound()
    visible = [w for w in read.workloads if _sees(caller, read.access.owner_org_id, w)]
    if not visible:
        raise NotFound()
    matches = [w for w in visible if w.id > after and (not states or _state(w) in states)]
    page = matches[:limit]
    more = len(matches) > limit
    next_cursor = encode_cursor(Cursor(page[-1].id), scope, cursor_key) if more else None
    items = [read_workload_view(node_id, w) for w in page]
    return WorkloadPage(items=items, next_cursor=next_cursor)


def _sees(caller: Caller, owner_org_id: str, workload: Workload) -> bool:
    return runs_the_node(caller, owner_org_id) or workload.org_id == caller.org_id


def _state(workload: Workload) -> str:
    return workload.state.value


def _states(text: str | None) -> frozenset[str]:
    """Comma-separated workload states; an unknown one is a 400 naming ``state``."""
    if text is None:
        return frozenset()
    names = [name.strip(" ") for name in text.split(",")]
    if unknown := [name for name in names if name not in STATES]:
        raise InvalidRequest(
            f"state must be a comma-separated list of {', '.join(STATES)}",
            [FieldProblem("state", f"unknown state {unknown[0][:40]!r}")],
        )
    return frozenset(names)

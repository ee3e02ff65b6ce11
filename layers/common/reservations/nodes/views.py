"""The one mapping from the domain to the API's views: units, workloads and the node as
shown (a reservation as shown is the lifecycle slice's, ``lifecycle.views``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from reservations.kernel.times import format_event_time, format_moment, format_time
from reservations.nodes.models.partition import (
    Node,
    NodeSnapshot,
    Unit,
    Workload,
    WorkloadState,
    WorkloadUse,
)
from reservations.nodes.models.views import (
    NodeView,
    UnitView,
    WaitingForView,
    WorkloadTermination,
    WorkloadView,
)
from reservations.nodes.rules.promises import reservation_promise
from reservations.nodes.rules.units import governing_reservation, is_released, not_reservable_reason


def unit_view(unit: Unit, snapshot: NodeSnapshot, now: datetime) -> UnitView:
    """A unit with its reservability, the reservation governing it now, and (released) the
    promises a spot workload placed on it now would get."""
    reason = not_reservable_reason(unit)
    governed = governing_reservation(unit.id, snapshot.reservations, snapshot.node, now)
    released = is_released(governed[0], governed[1], unit.id) if governed else None
    # What the scheduler reads before it places spot work, on a released unit only (its
    # governing reservation is then active: the one a placement reads the promise from).
    promise = reservation_promise(governed[0], now) if governed and released else None
    return UnitView(
        id=unit.id,
        alloc_class=unit.alloc_class,
        gpu_model_id=unit.gpu_model_id,
        gpu_model_name=unit.gpu_model_name,
        sellable_gpus=unit.sellable_gpus,
        state="claimed" if unit.claimed_by else "free",
        claimed_by=unit.claimed_by,
        held_for=unit.held_for,
        reservable=reason is None,
        not_reservable_reason=reason,
        reservation_id=governed[0].id if governed else None,
        released=released,
        promised_notice_seconds=promise[0] if promise else None,
        promised_min_run_seconds=promise[1] if promise else None,
    )


def workload_view(node_id: str, workload: Workload, created_at: datetime) -> WorkloadView:
    """A placed workload, its units sorted: running, or waiting (a take-back's)."""
    state: Literal["running", "waiting"] = (
        "waiting" if workload.state is WorkloadState.WAITING else "running"
    )
    return _workload_view(node_id, workload, state, format_time(created_at))


def read_workload_view(node_id: str, workload: Workload) -> WorkloadView:
    """A workload as read: ``running`` or ``terminating`` (with its termination)."""
    termination = None
    record = workload.termination
    if workload.state is WorkloadState.TERMINATING and record is not None:
        requested, deadline = record.requested_at, record.deadline
        termination = WorkloadTermination(
            id=record.id,
            reservation_id=record.reservation_id,
            requested_at=format_moment(requested) if requested is not None else None,
            terminate_at=format_moment(deadline) if deadline is not None else None,
        )
    states: dict[WorkloadState, Literal["running", "terminating", "waiting"]] = {
        WorkloadState.TERMINATING: "terminating",
        WorkloadState.WAITING: "waiting",
    }
    return _workload_view(
        node_id,
        workload,
        states.get(workload.state, "running"),
        format_time(workload.created_at) if workload.created_at else None,
        termination,
    )


def ended_workload_view(node_id: str, workload: Workload, use: WorkloadUse) -> WorkloadView:
    """A workload that left the node (ended, or reported stopped), as its history keeps it:
    ``ended``, with its own use."""
    created_at = format_time(workload.created_at) if workload.created_at else None
    return _workload_view(node_id, workload, "ended", created_at, use=use)


def _workload_view(
    node_id: str,
    workload: Workload,
    state: Literal["running", "terminating", "waiting", "ended"],
    created_at: str | None,
    termination: WorkloadTermination | None = None,
    use: WorkloadUse | None = None,
) -> WorkloadView:
    """The workload's view: its units sorted, in ``state`` (waiting: what it waits on;
    ended: its own use)."""
    waiting_for = None
    if state == "waiting":
        waiting_for = [
            WaitingForView(workload_id=w, termination_id=t, terminate_at=format_moment(at))
            for w, t, at in workload.waiting_for
        ]
    return WorkloadView(
        id=workload.id,
        node_id=node_id,
        kind=workload.kind.value,
        tier=workload.tier.value,
        org_id=workload.org_id,
        unit_ids=sorted(workload.unit_ids),
        state=state,
        termination=termination,
        waiting_for=waiting_for,
        created_at=created_at,
        promised_notice_seconds=workload.promised_notice_seconds,
        promised_min_run_seconds=workload.promised_min_run_seconds,
        used_from=format_event_time(use.used_from) if use else None,
        used_to=format_event_time(use.used_to) if use else None,
        gpu_ms=use.gpu_ms if use else None,
    )


def node_view(node: Node, unit_ids: list[str], now: datetime) -> NodeView:
    """A node with its units' ids sorted (an item from before nodes kept times: now)."""
    return NodeView(
        id=node.id,
        owner_org_id=node.owner_org_id,
        topology_gen=node.topology_gen or 0,
        unit_ids=sorted(unit_ids),
        created_at=format_time(node.created_at or node.updated_at or now),
        updated_at=format_time(node.updated_at or node.created_at or now),
    )

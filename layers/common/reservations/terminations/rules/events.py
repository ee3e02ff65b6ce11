"""The events of a termination: requested, done (or failed), stuck (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from reservations.kernel.envelope import (
    EventContext,
    EventType,
    StoredEvent,
    declare_event_types,
    new_event,
)
from reservations.kernel.times import format_event_time, format_moment
from reservations.nodes import Reservation, Termination, Workload, workload_data


@declare_event_types
class TerminationEvent(EventType):
    """A workload's termination: the types this slice builds."""

    REQUESTED = "workload.termination_requested"
    TERMINATED = "workload.terminated"
    STUCK = "workload.termination_stuck"
    STARTED = "workload.started"


def termination_requested(
    context: EventContext,
    workload: Workload,
    termination_id: str,
    reservation: Reservation,
    reason: str | None,
    terminate_at: datetime | None = None,
    requested_at: datetime | None = None,
) -> StoredEvent:
    """A reclaim terminates the workload: which reservation took its units back, why, when
    (``requested_at``, the reclaim's commit unless a termination under way is given again)
    and by when it is stopped (``terminate_at``, the request without a notice). Seen by the
    workload's org and that reservation's managers too."""
    requested = requested_at or context.at
    data = {
        **workload_data(workload),
        "terminationId": termination_id,
        "reservationId": reservation.id,
        "reason": reason,
        "requestedAt": format_moment(requested),
        "terminateAt": format_moment(terminate_at or requested),
    }
    audience = (workload.org_id, *reservation.managing_org_ids)
    return new_event(
        context,
        TerminationEvent.REQUESTED,
        f"workloads/{workload.id}",
        data,
        audience,
    )


def workload_terminated(
    context: EventContext,
    workload: Workload,
    outcome: str,
    stopped_at: datetime,
    reclaiming_managers: Iterable[str],
    *,
    gpus: int,
) -> StoredEvent:
    """The node reported the workload stopped (``terminated``) or already not running
    (``gone``), at ``stopped_at`` (its report's time): what billing stops at. With its own
    use on ``gpus`` GPUs up to the commit of the write that applied the report (``usedTo``:
    the event's time, which the service fixes, never the node's clock)."""
    data = {
        **workload_data(workload, workload.use_until(context.at, gpus)),
        "outcome": outcome,
        "time": format_event_time(stopped_at),
        **_termination_data(workload.termination),
    }
    return new_event(
        context,
        TerminationEvent.TERMINATED,
        f"workloads/{workload.id}",
        data,
        (workload.org_id, *reclaiming_managers),
    )


def termination_stuck(context: EventContext, workload: Workload, deliveries: int) -> StoredEvent:
    """The sweeper flagged the termination: delivered ``deliveries`` times without a report.
    The operator's and the node owner's business only."""
    data = {
        **workload_data(workload),
        **_termination_data(workload.termination),
        "deliveries": deliveries,
    }
    return new_event(context, TerminationEvent.STUCK, f"workloads/{workload.id}", data, ())


def _termination_data(termination: Termination | None) -> dict[str, Any]:
    """The termination an event is about: its id, reservation and when it was asked for."""
    if termination is None:
        return {"terminationId": None, "reservationId": None, "requestedAt": None}
    requested = termination.requested_at
    return {
        "terminationId": termination.id,
        "reservationId": termination.reservation_id,
        "requestedAt": format_moment(requested) if requested else None,
    }


def workload_started(context: EventContext, workload: Workload) -> StoredEvent:
    """A waiting workload (a take-back's) claims all its units now: the last spot workload
    it waited on stopped. The scheduler starts it on this event; its use starts here."""
    data = {**workload_data(workload), "state": workload.state.value}
    return new_event(
        context, TerminationEvent.STARTED, f"workloads/{workload.id}", data, (workload.org_id,)
    )

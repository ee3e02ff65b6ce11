"""The events of the scheduler's calls: a workload placed, a workload ended (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from reservations.kernel.envelope import (
    EventContext,
    EventType,
    StoredEvent,
    declare_event_types,
    new_event,
)
from reservations.kernel.times import format_moment
from reservations.nodes import Workload, workload_data


@declare_event_types
class WorkloadEvent(EventType):
    """A workload placed and ended: the types this slice builds."""

    PLACED = "workload.placed"
    ENDED = "workload.ended"


def workload_placed(
    context: EventContext,
    workload: Workload,
    *,
    reservation_id: str | None = None,
    reclaimed_unit_ids: Iterable[str] | None = None,
) -> StoredEvent:
    """A placement: the workload as placed, with what it was promised (0 and 0 but for a
    spot workload on lent units whose reservations promise something). A placement with
    ``reservationId`` also says its state (running, or waiting), the units it took back
    (``reclaimedUnitIds``) and the spot workloads it waits on (``waitingFor``)."""
    data: dict[str, Any] = {
        **workload_data(workload),
        "promisedNoticeSeconds": workload.promised_notice_seconds,
        "promisedMinRunSeconds": workload.promised_min_run_seconds,
    }
    if reservation_id is not None:
        data |= {
            "reservationId": reservation_id,
            "state": workload.state.value,
            "reclaimedUnitIds": sorted(reclaimed_unit_ids or ()),
            "waitingFor": [
                {"workloadId": w, "terminationId": t, "terminateAt": format_moment(at)}
                for w, t, at in workload.waiting_for
            ],
        }
    return new_event(
        context, WorkloadEvent.PLACED, f"workloads/{workload.id}", data, (workload.org_id,)
    )


def workload_ended(
    context: EventContext, workload: Workload, freed_unit_ids: Iterable[str], *, gpus: int
) -> StoredEvent:
    """An end (the workload stopped on its own): the units it freed, the termination it
    closed, if one was open, and its own use up to the end's commit on ``gpus`` GPUs (what
    its units sell as the node states them at the end)."""
    data = {
        **workload_data(workload, workload.use_until(context.at, gpus)),
        "freedUnitIds": sorted(freed_unit_ids),
        "terminationId": workload.termination.id if workload.termination else None,
    }
    return new_event(
        context, WorkloadEvent.ENDED, f"workloads/{workload.id}", data, (workload.org_id,)
    )

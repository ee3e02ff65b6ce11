"""The events of the scheduler's calls: a workload placed, a workload ended (pure)."""

from __future__ import annotations

from collections.abc import Iterable

from reservations.kernel.envelope import (
    EventContext,
    EventType,
    StoredEvent,
    new_event,
)
from reservations.nodes import Workload, workload_data


def workload_placed(context: EventContext, workload: Workload) -> StoredEvent:
    """A placement: the workload as placed."""
    return new_event(
        context,
        EventType.WORKLOAD_PLACED,
        f"workloads/{workload.id}",
        workload_data(workload),
        (workload.org_id,),
    )


def workload_ended(
    context: EventContext, workload: Workload, freed_unit_ids: Iterable[str]
) -> StoredEvent:
    """An end (the workload stopped on its own): the units it freed, and the termination it
    closed, if one was open."""
    data = {
        **workload_data(workload),
        "freedUnitIds": sorted(freed_unit_ids),
        "terminationId": workload.termination.id if workload.termination else None,
    }
    return new_event(
        context, EventType.WORKLOAD_ENDED, f"workloads/{workload.id}", data, (workload.org_id,)
    )

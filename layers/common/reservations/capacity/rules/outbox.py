"""What a reclaim leaves in the outbox (``terminations``): the terminations it opened, and
those whose deadline it moved, as the outbox items the reclaim sends at once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reservations.capacity.writes import ReclaimWrite
from reservations.nodes import Termination, Workload, WorkloadState, termination_of
from reservations.terminations import OpenTermination


def opened_by(write: ReclaimWrite, workloads: Sequence[Workload]) -> list[OpenTermination]:
    """The terminations ``write`` opened, and those whose deadline it moved earlier, as the
    outbox now holds them."""
    by_id = {w.id: w for w in workloads}
    opened = [
        OpenTermination(
            write.node_id,
            replace(
                by_id[t.workload.id],
                state=WorkloadState.TERMINATING,
                termination=Termination(
                    t.termination_id,
                    write.reservation.id,
                    write.reason,
                    write.at,
                    terminate_at=t.terminate_at or write.at,
                ),
            ),
        )
        for t in write.terminations
    ]
    moved = [
        OpenTermination(
            write.node_id,
            replace(
                by_id[change.workload.id],
                termination=replace(
                    termination_of(by_id[change.workload.id]),
                    terminate_at=change.terminate_at,
                    deadline_changes=change.changes,
                    deliveries=0,
                ),
            ),
        )
        for change in write.deadline_changes
    ]
    return opened + moved

"""What a reclaim answers: the reservation after it, and what it did (or, in a dry run,
would do) to the workloads on the units."""

from __future__ import annotations

from pydantic import Field

from reservations.nodes.models.views import ReservationView


class ReclaimResponse(ReservationView):
    """The reservation after the reclaim, plus what was (or, dry run, would be) done."""

    terminated: list[str] | None = Field(default=None, description="real run: workload ids")
    skipped: list[str] | None = Field(default=None, description="real run: not spot, left running")
    would_terminate: list[str] | None = Field(default=None, description="dry run")
    would_skip: list[str] | None = Field(default=None, description="dry run")

"""The release and reclaim body, and what a reclaim answers: the reservation after it, and
what it did (or, in a dry run, would do) to the workloads on the units."""

from __future__ import annotations

from pydantic import ConfigDict, Field, StrictBool, StrictStr

from reservations.kernel.bodies import (
    MAX_REASON,
    RawBody,
    StrictBody,
    UnitIds,
    normalized_unit_ids,
    required_body,
    unit_ids_field,
)
from reservations.nodes import ReservationView


class ReclaimResponse(ReservationView):
    """The reservation after the reclaim, plus what was (or, dry run, would be) done."""

    terminated: list[str] | None = Field(default=None, description="real run: workload ids")
    skipped: list[str] | None = Field(default=None, description="real run: not spot, left running")
    would_terminate: list[str] | None = Field(default=None, description="dry run")
    would_skip: list[str] | None = Field(default=None, description="dry run")


class CapacityRequest(StrictBody):
    """The body of release and reclaim: which units, a dry run or not, why."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"unitIds": ["0000:04:00.0", "0000:05:00.0"], "dryRun": True},
                {"unitIds": ["0000:04:00.0"], "reason": "the lab needs its GPUs back"},
            ]
        },
    )

    unit_ids: UnitIds = unit_ids_field(
        "PCI addresses dddd:bb:dd.f (hex, compared case-insensitively), no duplicates"
    )
    dry_run: StrictBool = Field(default=False, alias="dryRun")
    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON)


def _normalized(request: CapacityRequest) -> CapacityRequest:
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})


def parse_capacity_request(raw: RawBody) -> CapacityRequest:
    """The validated release or reclaim body, unit ids normalised; 400 naming the field."""
    return _normalized(required_body(raw, CapacityRequest))

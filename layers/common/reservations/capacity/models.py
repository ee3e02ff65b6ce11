"""The release and reclaim body, and what a reclaim answers: the reservation after it, and
what it did (or, in a dry run, would do) to the workloads on the units."""

from __future__ import annotations

from typing import TypeVar

from pydantic import ConfigDict, Field, StrictBool, StrictStr

from reservations.kernel.bodies import (
    MAX_REASON,
    JsonInt,
    RawBody,
    StrictBody,
    UnitIds,
    normalized_unit_ids,
    required_body,
    unit_ids_field,
)
from reservations.kernel.wire import Timestamp
from reservations.nodes import ReservationView

# The longest notice a reclaim may give its spot workloads, in seconds.
MAX_NOTICE_SECONDS = 3600


_Capacity = TypeVar("_Capacity", bound="CapacityRequest")


class ReclaimResponse(ReservationView):
    """The reservation after the reclaim, plus what was (or, dry run, would be) done."""

    terminated: list[str] | None = Field(default=None, description="real run: workload ids")
    skipped: list[str] | None = Field(default=None, description="real run: not spot, left running")
    would_terminate: list[str] | None = Field(default=None, description="dry run")
    would_skip: list[str] | None = Field(default=None, description="dry run")
    terminate_at: Timestamp | None = Field(
        default=None,
        description="real run: this call's deadline, its commit plus noticeSeconds (to the "
        "millisecond); each terminated workload's termination has its own terminateAt",
    )


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


class ReclaimRequest(CapacityRequest):
    """The body of reclaim: release's, plus the notice its spot workloads get."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"unitIds": ["0000:04:00.0", "0000:05:00.0"], "dryRun": True},
                {"unitIds": ["0000:04:00.0"], "reason": "the lab needs its GPUs back"},
                {"unitIds": ["0000:04:00.0"], "noticeSeconds": 120, "reason": "lab at noon"},
            ]
        },
    )

    notice_seconds: JsonInt = Field(
        default=0,
        alias="noticeSeconds",
        ge=0,
        le=MAX_NOTICE_SECONDS,
        # Out of the body's Idempotency-Key fingerprint when 0: a reclaim without notice is
        # the request it was before the field existed (its records outlive a deploy).
        exclude_if=lambda seconds: seconds == 0,
        description="seconds the spot workloads get before the node stops them (their "
        "terminateAt); the units leave releasedUnitIds at once",
    )


def _normalized(request: _Capacity) -> _Capacity:
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})


def parse_capacity_request(raw: RawBody) -> CapacityRequest:
    """The validated release body, unit ids normalised; 400 naming the field."""
    return _normalized(required_body(raw, CapacityRequest))


def parse_reclaim_request(raw: RawBody) -> ReclaimRequest:
    """The validated reclaim body, unit ids normalised; 400 naming the field."""
    return _normalized(required_body(raw, ReclaimRequest))

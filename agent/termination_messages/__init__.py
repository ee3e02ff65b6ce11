"""The messages between the API and the node agents, version 1 (docs/messages.md).

One definition for both sides: the API's functions get this package in their Lambda layer
(the layer's build copies it), and the node agent's distribution (``agent/pyproject.toml``)
ships it. It depends on pydantic alone, so either side can install it.

Compatibility rule: within a version, fields are only ever added, never removed, renamed or
given a new meaning, so consumers must ignore fields they do not know (``extra="ignore"``).
A change that breaks that rule is a new ``version``, and the producer sends the old one
until every consumer reads the new one. Optional fields are absent when unset, never null.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer

__all__ = ["Outcome", "SpotTermination", "TerminationReport", "WorkloadKind", "wire_time"]

# What a node made of a termination: stopped it now, it was not running, or try again.
Outcome = Literal["terminated", "gone", "failed"]


class WorkloadKind(StrEnum):
    VM = "vm"
    POD = "pod"


def wire_time(moment: datetime) -> str:
    """A message's time: RFC 3339 in UTC with a ``Z``, to the millisecond; a whole second is
    written without a fraction (as senders before ``terminateAt`` wrote every time)."""
    utc = moment.astimezone(UTC)
    whole = utc.strftime("%Y-%m-%dT%H:%M:%S")
    millis = utc.microsecond // 1000
    return f"{whole}.{millis:03d}Z" if millis else f"{whole}Z"


class SpotTermination(BaseModel):
    """Stop one spot workload on one node by ``terminateAt`` (now when absent), and report
    back."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    version: Literal[1] = 1
    type: Literal["spot-termination"] = "spot-termination"
    termination_id: str = Field(
        alias="terminationId", description="unique; the consumer's idempotency key"
    )
    node_id: str = Field(alias="nodeId")
    workload_id: str = Field(alias="workloadId", description="the <id> of vm:<id> / pod:<id>")
    workload_kind: WorkloadKind = Field(alias="workloadKind")
    unit_ids: list[str] = Field(alias="unitIds")
    reservation_id: str = Field(alias="reservationId")
    reason: str | None = Field(default=None, description="the reclaim's reason, if given")
    requested_at: datetime = Field(alias="requestedAt")
    terminate_at: datetime | None = Field(
        default=None,
        alias="terminateAt",
        description="the deadline: requestedAt plus the reclaim's notice; absent (an older "
        "sender) means now",
    )

    @field_serializer("requested_at", "terminate_at")
    def _times(self, moment: datetime | None) -> str | None:
        return wire_time(moment) if moment is not None else None

    @property
    def deadline(self) -> datetime:
        """When the workload must be stopped: ``terminateAt``, or the request without it."""
        return self.terminate_at or self.requested_at

    @property
    def notice_seconds(self) -> float:
        """The notice the reclaim gave (0 without ``terminateAt``)."""
        return max((self.deadline - self.requested_at).total_seconds(), 0.0)

    def to_json(self) -> str:
        """The wire form: optional fields that are unset are absent, never ``null``."""
        return self.model_dump_json(by_alias=True, exclude_none=True)


class TerminationReport(BaseModel):
    """A node's answer to a SpotTermination, on the shared reports queue (same rule)."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    version: Literal[1] = 1
    type: Literal["termination-report"] = "termination-report"
    termination_id: str = Field(alias="terminationId")
    node_id: str = Field(alias="nodeId")
    workload_id: str = Field(alias="workloadId")
    outcome: Outcome = Field(
        description="terminated: stopped now; gone: was not running; failed: will be retried"
    )
    detail: str | None = Field(default=None, max_length=1000)
    reported_at: datetime = Field(alias="reportedAt")

    def to_json(self) -> str:
        """The wire form: optional fields that are unset are absent, never ``null``."""
        return self.model_dump_json(by_alias=True, exclude_none=True)

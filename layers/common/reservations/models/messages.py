"""The spot-termination message (API -> node), version 1. Documented in docs/messages.md.

Compatibility rule: within a version, fields are only ever added, never removed, renamed or
given a new meaning, so consumers must ignore fields they do not know (``extra="ignore"``).
A change that breaks that rule is a new ``version``, and the producer sends the old one
until every consumer reads the new one. Optional fields are absent when unset, never null.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from reservations.models.domain import WorkloadKind


class SpotTermination(BaseModel):
    """Stop one spot workload on one node, now, and report back."""

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
    outcome: Literal["terminated", "gone", "failed"] = Field(
        description="terminated: stopped now; gone: was not running; failed: will be retried"
    )
    detail: str | None = Field(default=None, max_length=1000)
    reported_at: datetime = Field(alias="reportedAt")

    def to_json(self) -> str:
        """The wire form: optional fields that are unset are absent, never ``null``."""
        return self.model_dump_json(by_alias=True, exclude_none=True)


class SendResult(StrEnum):
    """What a queue made of one send: only ``ACCEPTED`` is a delivery."""

    ACCEPTED = "accepted"
    NO_QUEUE = "no_queue"
    FAILED = "failed"

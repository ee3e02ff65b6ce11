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

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Outcome", "SpotTermination", "TerminationReport", "WorkloadKind"]

# What a node made of a termination: stopped it now, it was not running, or try again.
Outcome = Literal["terminated", "gone", "failed"]


class WorkloadKind(StrEnum):
    VM = "vm"
    POD = "pod"


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
    outcome: Outcome = Field(
        description="terminated: stopped now; gone: was not running; failed: will be retried"
    )
    detail: str | None = Field(default=None, max_length=1000)
    reported_at: datetime = Field(alias="reportedAt")

    def to_json(self) -> str:
        """The wire form: optional fields that are unset are absent, never ``null``."""
        return self.model_dump_json(by_alias=True, exclude_none=True)

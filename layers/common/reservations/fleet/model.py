"""The fleet file's schema, validated whole before anything is written.

Unknown fields are rejected (a typo such as ``relasedUnitIds`` must not load silently),
booleans must be JSON booleans, and cross-references (units of reservations and workloads,
released within reserved, one live workload per unit) are checked.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Self

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    model_validator,
)

from reservations.models.domain import (
    ReservationStatus,
    Tier,
    WorkloadKind,
    WorkloadState,
)
from reservations.rules.ids import is_resource_id, is_workload_id, normalize_unit_id


def _resource_id(value: str) -> str:
    if not is_resource_id(value):
        raise ValueError("must be 1-128 letters, digits, '.', '_', ':' or '-', starting alnum")
    return value


def _workload_id(value: str) -> str:
    if not is_workload_id(value):
        raise ValueError("must be 1-128 letters, digits, '.', '_', ':' or '-', starting alnum")
    return value


def _unit_id(value: str) -> str:
    normalized = normalize_unit_id(value)
    if normalized is None:
        raise ValueError("must be a PCI address dddd:bb:dd.f in hex, e.g. 0000:04:00.0")
    return normalized


def _api_key(value: str) -> str:
    if not value.startswith("vl_") or len(value) < 8 or not value.isascii() or " " in value:
        raise ValueError("must start with 'vl_' and be at least 8 visible ASCII characters")
    return value


ResourceId = Annotated[str, AfterValidator(_resource_id)]
WorkloadId = Annotated[str, AfterValidator(_workload_id)]
UnitId = Annotated[str, AfterValidator(_unit_id)]
NonEmpty = Annotated[str, Field(min_length=1)]


def _duplicates(values: list[str]) -> list[str]:
    return sorted(value for value, count in Counter(values).items() if count > 1)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class FleetApiKey(_Strict):
    key: Annotated[str, AfterValidator(_api_key)]
    org_id: NonEmpty = Field(alias="orgId")
    permissions: list[NonEmpty]
    revoked: StrictBool = False
    expires_at: AwareDatetime | None = Field(default=None, alias="expiresAt")
    id: NonEmpty | None = Field(default=None, description="audit handle; derived when absent")


class FleetUnit(_Strict):
    id: UnitId
    alloc_class: NonEmpty = Field(alias="allocClass")
    gpu_model_id: NonEmpty = Field(alias="gpuModelId")
    gpu_model_name: NonEmpty | None = Field(default=None, alias="gpuModelName")
    sellable_gpus: StrictInt = Field(alias="sellableGpus", ge=0)
    sellable: StrictBool
    not_sellable_reason: NonEmpty | None = Field(default=None, alias="notSellableReason")


class FleetReservation(_Strict):
    id: ResourceId
    status: ReservationStatus
    starts_at: AwareDatetime = Field(alias="startsAt")
    ends_at: AwareDatetime | None = Field(default=None, alias="endsAt")
    allowed_org_ids: list[NonEmpty] = Field(default_factory=list, alias="allowedOrgIds")
    managing_org_ids: list[NonEmpty] = Field(default_factory=list, alias="managingOrgIds")
    reserved_unit_ids: list[UnitId] = Field(alias="reservedUnitIds")
    released_unit_ids: list[UnitId] = Field(default_factory=list, alias="releasedUnitIds")
    contract_ref: NonEmpty | None = Field(default=None, alias="contractRef")
    reason: str | None = None
    topology_gen: StrictInt | None = Field(default=None, alias="topologyGen", ge=0)
    created_at: AwareDatetime | None = Field(default=None, alias="createdAt")
    updated_at: AwareDatetime | None = Field(default=None, alias="updatedAt")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.ends_at is not None and self.ends_at <= self.starts_at:
            raise ValueError("endsAt must be after startsAt")
        for name, ids in (
            ("reservedUnitIds", self.reserved_unit_ids),
            ("releasedUnitIds", self.released_unit_ids),
        ):
            if dupes := _duplicates(ids):
                raise ValueError(f"{name} has duplicates: {', '.join(dupes)}")
        if extra := sorted(set(self.released_unit_ids) - set(self.reserved_unit_ids)):
            raise ValueError(f"releasedUnitIds not in reservedUnitIds: {', '.join(extra)}")
        return self


class FleetWorkload(_Strict):
    id: WorkloadId
    kind: WorkloadKind
    tier: Tier
    org_id: NonEmpty = Field(alias="orgId")
    unit_ids: list[UnitId] = Field(alias="unitIds", min_length=1)
    state: WorkloadState
    termination_id: NonEmpty | None = Field(default=None, alias="terminationId")

    @model_validator(mode="after")
    def _unique_units(self) -> Self:
        if dupes := _duplicates(self.unit_ids):
            raise ValueError(f"unitIds has duplicates: {', '.join(dupes)}")
        return self


class FleetNode(_Strict):
    id: ResourceId
    owner_org_id: NonEmpty = Field(alias="ownerOrgId")
    topology_gen: StrictInt | None = Field(default=None, alias="topologyGen", ge=0)
    units: list[FleetUnit] = Field(default_factory=list)
    reservations: list[FleetReservation] = Field(default_factory=list)
    workloads: list[FleetWorkload] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> Self:
        unit_ids = [unit.id for unit in self.units]
        for kind, ids in (
            ("unit", unit_ids),
            ("reservation", [r.id for r in self.reservations]),
            ("workload", [w.id for w in self.workloads]),
        ):
            if dupes := _duplicates(ids):
                raise ValueError(f"duplicate {kind} ids: {', '.join(dupes)}")
        known = set(unit_ids)
        for reservation in self.reservations:
            if unknown := sorted(set(reservation.reserved_unit_ids) - known):
                raise ValueError(
                    f"reservation {reservation.id} reserves unknown units: {', '.join(unknown)}"
                )
        holders: dict[str, str] = {}
        for workload in self.workloads:
            if unknown := sorted(set(workload.unit_ids) - known):
                raise ValueError(f"workload {workload.id} uses unknown units: {', '.join(unknown)}")
            if workload.state is WorkloadState.TERMINATED:
                continue
            for unit_id in workload.unit_ids:
                if unit_id in holders:
                    raise ValueError(
                        f"unit {unit_id} is held by both {holders[unit_id]} and {workload.id}"
                    )
                holders[unit_id] = workload.id
        return self


class Fleet(_Strict):
    platform_org_id: NonEmpty = Field(alias="platformOrgId")
    api_keys: list[FleetApiKey] = Field(default_factory=list, alias="apiKeys")
    nodes: list[FleetNode] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> Self:
        if dupes := _duplicates([node.id for node in self.nodes]):
            raise ValueError(f"duplicate node ids: {', '.join(dupes)}")
        if _duplicates([api_key.key for api_key in self.api_keys]):
            raise ValueError("an API key appears twice")  # never echo a key
        return self


def parse_fleet(text: str | bytes) -> Fleet:
    """Validate a fleet file's JSON text (raises pydantic's ValidationError)."""
    return Fleet.model_validate_json(text)

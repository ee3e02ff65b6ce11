"""The fleet file's schema, validated whole before anything is written.

Unknown fields and names given twice in one object are rejected (a typo such as
``relasedUnitIds``, or a second ``sellable``, must not load silently), booleans must be JSON
booleans, and cross-references (units of reservations and workloads, released within
reserved, one live workload per unit) are checked, each error naming the exact field.
Every string and number is bounded, so a file that validates fits the store's limits and
loads whole.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from reservations.kernel.auth import bearer_token, derive_key_id
from reservations.kernel.bodies import JsonInt
from reservations.kernel.errors import Unauthorized
from reservations.kernel.ids import is_resource_id
from reservations.kernel.times import GivenTime, term_problem
from reservations.nodes.ids import is_workload_id, normalize_unit_id
from reservations.nodes.models.partition import (
    Node,
    Reservation,
    ReservationStatus,
    Tier,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.rules.units import governing_reservation
from reservations.terminations.ids import is_termination_id

# What the API itself accepts: a node is registered with at most 64 units, a reservation
# names at most 50 orgs of each kind; reason and contract reference as on create.
MAX_UNITS_PER_NODE = 64
MAX_GENERATED_PAST = 100_000
MAX_ORG_IDS = 50
MAX_REASON = 1000
MAX_CONTRACT_REF = 200
MAX_NAME = 256  # GPU model names, why a unit is not sellable
MAX_TOKEN = 128  # allocation classes, GPU model ids
MAX_SELLABLE_GPUS = 1024
MAX_TOPOLOGY_GEN = 2**53 - 1  # exact in every JSON reader, far inside DynamoDB's numbers
_ID_RULE = "must be 1-128 letters, digits, '.', '_', ':' or '-', starting alnum"


def _resource_id(value: str) -> str:
    if not is_resource_id(value):
        raise ValueError(_ID_RULE)
    return value


def _workload_id(value: str) -> str:
    if not is_workload_id(value):
        raise ValueError(_ID_RULE)
    return value


def _unit_id(value: str) -> str:
    normalized = normalize_unit_id(value)
    if normalized is None:
        raise ValueError("must be a PCI address dddd:bb:dd.f in hex, e.g. 0000:04:00.0")
    return normalized


def _api_key(value: str) -> str:
    # Exactly what authentication accepts: a key it would refuse could never be used.
    try:
        usable = bearer_token(f"Bearer {value}") == value
    except Unauthorized:
        usable = False
    if not usable:
        raise ValueError("must be 'vl_' then 1-512 visible ASCII characters")
    return value


def _termination_id(value: str) -> str:
    if not is_termination_id(value):
        raise ValueError("must be 1-100 letters, digits or ASCII punctuation (no spaces)")
    return value


def _unique(values: list[str]) -> list[str]:
    # The error names the repeat's index; ``describe`` appends it to the list's own path.
    if repeat := _first_repeat(values):
        first, second = repeat
        raise field_error(f"[{second}]", f"duplicate {values[second]} (also at index {first})")
    return values


ResourceId = Annotated[str, AfterValidator(_resource_id)]
OrgId = Annotated[str, AfterValidator(_resource_id)]
OrgIds = Annotated[list[OrgId], Field(max_length=MAX_ORG_IDS), AfterValidator(_unique)]
WorkloadId = Annotated[str, AfterValidator(_workload_id)]
UnitId = Annotated[str, AfterValidator(_unit_id)]
# Unknown permissions are errors: a misspelt one would load a key that silently can't.
Permission = Literal[
    "reservation.read",
    "reservation.capacity",
    "reservation.write",
    "node.write",
    "workload.place",
    "events.read",
    "usage.read",
]
Token = Annotated[str, Field(min_length=1, max_length=MAX_TOKEN)]
Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME)]
ContractRef = Annotated[str, Field(min_length=1, max_length=MAX_CONTRACT_REF)]
Reason = Annotated[str, Field(max_length=MAX_REASON)]
TopologyGen = Annotated[JsonInt, Field(ge=0, le=MAX_TOPOLOGY_GEN)]


def _first_repeat(values: list[str]) -> tuple[int, int] | None:
    """The positions of the first value seen twice: (first, second)."""
    first: dict[str, int] = {}
    for index, value in enumerate(values):
        if value in first:
            return first[value], index
        first[value] = index
    return None


def field_error(field: str, message: str) -> PydanticCustomError:
    """An error about ``field`` (a path relative to the model that raises it)."""
    return PydanticCustomError("fleet_field", "{message}", {"field": field, "message": message})


def _no_repeat(what: str, values: list[str], path: str) -> None:
    """Refuse a list with a value in it twice, naming the second place: ``path`` is the
    place of one value, with ``{}`` for its index (``units[{}].id``)."""
    if repeat := _first_repeat(values):
        first, second = repeat
        raise field_error(
            path.format(second),
            f"duplicate {what} {values[second]} (also at {path.format(first)})",
        )


def fleet_termination_id(node_id: str, workload_id: str) -> str:
    """A termination id for a ``terminating`` workload the file gives none: short and stable."""
    digest = hashlib.sha256(f"{node_id}\0{workload_id}".encode()).hexdigest()[:32]
    return f"term-fleet-{digest}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class FleetApiKey(_Strict):
    key: Annotated[str, AfterValidator(_api_key)]
    org_id: OrgId = Field(alias="orgId")
    permissions: Annotated[list[Permission], AfterValidator(_unique)]
    revoked: StrictBool = False
    expires_at: GivenTime | None = Field(default=None, alias="expiresAt")
    id: ResourceId | None = Field(default=None, description="audit handle; derived when absent")

    @property
    def key_id(self) -> str:
        return self.id or derive_key_id(self.key)


class FleetUnit(_Strict):
    id: UnitId
    alloc_class: Token = Field(alias="allocClass")
    gpu_model_id: Token = Field(alias="gpuModelId")
    gpu_model_name: Name | None = Field(default=None, alias="gpuModelName")
    sellable_gpus: JsonInt = Field(alias="sellableGpus", ge=0, le=MAX_SELLABLE_GPUS)
    sellable: StrictBool
    not_sellable_reason: Name | None = Field(default=None, alias="notSellableReason")


class FleetReservation(_Strict):
    id: ResourceId
    status: ReservationStatus
    starts_at: GivenTime = Field(alias="startsAt")
    ends_at: GivenTime | None = Field(default=None, alias="endsAt")
    allowed_org_ids: OrgIds = Field(default_factory=list, alias="allowedOrgIds")
    managing_org_ids: OrgIds = Field(default_factory=list, alias="managingOrgIds")
    reserved_unit_ids: list[UnitId] = Field(alias="reservedUnitIds")
    released_unit_ids: list[UnitId] = Field(default_factory=list, alias="releasedUnitIds")
    contract_ref: ContractRef | None = Field(default=None, alias="contractRef")
    reason: Reason | None = None
    topology_gen: TopologyGen | None = Field(default=None, alias="topologyGen")
    created_at: GivenTime | None = Field(default=None, alias="createdAt")
    updated_at: GivenTime | None = Field(default=None, alias="updatedAt")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.ends_at is not None and (problem := term_problem(self.starts_at, self.ends_at)):
            raise field_error("endsAt", problem)
        _no_repeat("unit id", self.reserved_unit_ids, "reservedUnitIds[{}]")
        _no_repeat("unit id", self.released_unit_ids, "releasedUnitIds[{}]")
        reserved = set(self.reserved_unit_ids)
        for index, unit_id in enumerate(self.released_unit_ids):
            if unit_id not in reserved:
                raise field_error(
                    f"releasedUnitIds[{index}]", f"unit {unit_id} is not in reservedUnitIds"
                )
        return self

    def to_domain(self, node_id: str, loaded_at: datetime) -> Reservation:
        """The reservation as stored; times the file leaves out are the load time."""
        return Reservation(
            id=self.id,
            node_id=node_id,
            status=self.status,
            starts_at=self.starts_at,
            ends_at=self.ends_at,
            allowed_org_ids=tuple(self.allowed_org_ids),
            managing_org_ids=tuple(self.managing_org_ids),
            reserved_unit_ids=tuple(sorted(self.reserved_unit_ids)),
            released_unit_ids=tuple(sorted(self.released_unit_ids)),
            contract_ref=self.contract_ref,
            reason=self.reason,
            topology_gen=self.topology_gen,
            created_at=self.created_at or loaded_at,
            updated_at=self.updated_at or self.created_at or loaded_at,
        )


class FleetWorkload(_Strict):
    id: WorkloadId
    kind: WorkloadKind
    tier: Tier
    org_id: OrgId = Field(alias="orgId")
    unit_ids: list[UnitId] = Field(alias="unitIds", min_length=1)
    state: WorkloadState
    termination_id: Annotated[str, AfterValidator(_termination_id)] | None = Field(
        default=None, alias="terminationId"
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        _no_repeat("unit id", self.unit_ids, "unitIds[{}]")
        # Only spot workloads are ever terminated to give units back to a reservation.
        if self.state is WorkloadState.TERMINATING and self.tier is not Tier.SPOT:
            raise field_error("tier", "a terminating workload must be of tier spot")
        return self


class FleetNode(_Strict):
    id: ResourceId
    owner_org_id: OrgId = Field(alias="ownerOrgId")
    topology_gen: TopologyGen | None = Field(default=None, alias="topologyGen")
    units: list[FleetUnit] = Field(default_factory=list, max_length=MAX_UNITS_PER_NODE)
    reservations: list[FleetReservation] = Field(default_factory=list)
    workloads: list[FleetWorkload] = Field(default_factory=list)
    # Not in the contract's format (which the loader accepts exactly, and more): a number of
    # ended reservations the loader makes up for the node's history, so a demo or a
    # benchmark has a node with a long past without a file that spells it out.
    generated_past_reservations: JsonInt = Field(
        default=0, alias="generatedPastReservations", ge=0, le=MAX_GENERATED_PAST
    )

    @model_validator(mode="after")
    def _a_past_needs_a_unit(self) -> Self:
        if self.generated_past_reservations and not self.units:
            raise field_error(
                "generatedPastReservations", "a node without units has no past reservations"
            )
        return self

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        _no_repeat("unit id", [unit.id for unit in self.units], "units[{}].id")
        _no_repeat("reservation id", [r.id for r in self.reservations], "reservations[{}].id")
        _no_repeat("workload id", [w.id for w in self.workloads], "workloads[{}].id")
        return self

    @model_validator(mode="after")
    def _known_units(self) -> Self:
        # Released units are within reserved ones (checked by the reservation), so this covers
        # them too.
        known = {unit.id for unit in self.units}
        for r_index, reservation in enumerate(self.reservations):
            for u_index, unit_id in enumerate(reservation.reserved_unit_ids):
                if unit_id not in known:
                    raise field_error(
                        f"reservations[{r_index}].reservedUnitIds[{u_index}]",
                        f"reservation {reservation.id} reserves unknown unit {unit_id}",
                    )
        for w_index, workload in enumerate(self.workloads):
            for u_index, unit_id in enumerate(workload.unit_ids):
                if unit_id not in known:
                    raise field_error(
                        f"workloads[{w_index}].unitIds[{u_index}]",
                        f"workload {workload.id} uses unknown unit {unit_id}",
                    )
        return self

    @model_validator(mode="after")
    def _one_holder_per_unit(self) -> Self:
        holders: dict[str, str] = {}
        for w_index, workload in enumerate(self.workloads):
            if workload.state is WorkloadState.TERMINATED:
                continue
            for u_index, unit_id in enumerate(workload.unit_ids):
                if unit_id in holders:
                    raise field_error(
                        f"workloads[{w_index}].unitIds[{u_index}]",
                        f"unit {unit_id} is held by both {holders[unit_id]} and {workload.id}",
                    )
                holders[unit_id] = workload.id
        return self

    @model_validator(mode="after")
    def _terminations_have_a_reservation(self) -> Self:
        # A termination message names the reservation the units go back to.
        reserved = {unit_id for r in self.reservations for unit_id in r.reserved_unit_ids}
        for index, workload in enumerate(self.workloads):
            if workload.state is WorkloadState.TERMINATING and not reserved & set(
                workload.unit_ids
            ):
                raise field_error(
                    f"workloads[{index}].unitIds",
                    f"terminating workload {workload.id} is on no unit of a reservation",
                )
        return self

    def termination_reservation_id(
        self, workload: FleetWorkload, node: Node, now: datetime
    ) -> str | None:
        """The reservation a termination of ``workload`` gives its units back to.

        The one governing its units now (first governed unit in id order); failing that, as
        when the reservation was cancelled or expired while the termination was under way,
        the latest-starting reservation that holds one of its units.
        """
        reservations = [r.to_domain(self.id, now) for r in self.reservations]
        for unit_id in sorted(workload.unit_ids):
            if governing := governing_reservation(unit_id, reservations, node, now):
                return governing[0].id
        holders = [r for r in reservations if set(r.reserved_unit_ids) & set(workload.unit_ids)]
        if not holders:
            return None
        return max(holders, key=lambda r: (r.starts_at, r.id)).id


class Fleet(_Strict):
    platform_org_id: OrgId = Field(alias="platformOrgId")
    api_keys: list[FleetApiKey] = Field(default_factory=list, alias="apiKeys")
    nodes: list[FleetNode] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> Self:
        _no_repeat("node id", [node.id for node in self.nodes], "nodes[{}].id")
        for field, values in (
            ("key", [k.key for k in self.api_keys]),
            ("id", [k.key_id for k in self.api_keys]),  # an explicit id may equal a derived one
        ):
            if repeat := _first_repeat(values):
                # Named by position only: a key must never be echoed.
                raise field_error(
                    f"apiKeys[{repeat[1]}].{field}", f"same {field} as apiKeys[{repeat[0]}]"
                )
        return self


class _JsonObject(dict[str, Any]):
    """A JSON object as read, remembering the names it had more than once."""

    repeated: list[str]


def _keep_repeats(pairs: list[tuple[str, Any]]) -> _JsonObject:
    # A count, not pairs.count(name) for each name: an object of n names costs n, not n * n.
    document = _JsonObject(pairs)
    document.repeated = []
    if len(document) < len(pairs):
        counts = Counter(name for name, _ in pairs)  # in the order names first appear
        document.repeated = [name for name, count in counts.items() if count > 1]
    return document


# A place in the document: the parent's place and this step (None is the document itself).
# Each place keeps only its last step, so a path is spelt out only for a repeat reported.
_Place = tuple["_Place", int | str] | None


def _repeated_names(document: Any) -> Iterator[tuple[int | str, ...]]:
    """The path of every name given twice in its object, in document order (walked with a
    stack, not recursion, however deep the file nests)."""
    stack: list[tuple[_Place, Any]] = [(None, document)]
    while stack:
        place, value = stack.pop()
        children: list[tuple[int | str, Any]]
        if isinstance(value, _JsonObject):
            yield from (_path((place, name)) for name in value.repeated)
            children = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        else:
            continue
        stack.extend(((place, step), child) for step, child in reversed(children))


def _path(place: _Place) -> tuple[int | str, ...]:
    steps: list[int | str] = []
    while place is not None:
        place, step = place
        steps.append(step)
    return tuple(reversed(steps))


def _refuse_repeated_names(text: str | bytes) -> None:
    """Raise a ValidationError naming every key given twice in one object: JSON readers
    keep the last silently, so ``{"sellable": true, "sellable": false}`` would load."""
    try:
        document = json.loads(text, object_pairs_hook=_keep_repeats)
    except (ValueError, RecursionError):
        return  # not JSON: the schema's reader reports it, naming where
    errors: list[InitErrorDetails] = [
        {"type": PydanticCustomError("duplicate_key", "duplicate key"), "loc": loc, "input": None}
        for loc in _repeated_names(document)
    ]
    if errors:
        raise ValidationError.from_exception_data(Fleet.__name__, errors)


def parse_fleet(text: str | bytes) -> Fleet:
    """Validate a fleet file's JSON text (raises pydantic's ValidationError)."""
    _refuse_repeated_names(text)
    return Fleet.model_validate_json(text)

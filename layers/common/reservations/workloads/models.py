"""The body of a workload's placement, parsed strictly (anything not understood is a 400)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictStr

from reservations.kernel.bodies import JsonInt, RawBody, StrictBody, invalid_body, required_body
from reservations.kernel.errors import FieldProblem
from reservations.kernel.ids import RESOURCE_ID
from reservations.nodes import MAX_UNITS, UnitIds, normalized_unit_ids

# At most this many units a placement with ``reservationId`` takes (its claims, holds, the
# take-back and the terminations share one transaction).
MAX_TAKE_BACK_UNITS = 16
_UNIQUE: dict[str, Any] = {"uniqueItems": True}
_WAYS = ("unitIds", "count")
EXAMPLES = [
    {
        "id": "vm-42",
        "kind": "vm",
        "tier": "spot",
        "orgId": "org-spotbuyer",
        "unitIds": ["0000:06:00.0"],
    },
    {
        "id": "vm-43",
        "kind": "vm",
        "tier": "reserved",
        "orgId": "org-lab",
        "reservationId": "res-a-active",
        "count": 2,
    },
]


def _optional_fields(schema: dict[str, Any]) -> None:
    """``unitIds``, ``count`` and ``reservationId`` are each absent or given, never null.
    Which of them go together is the parser's (a 400 naming the field), and the fields'
    descriptions say it: the schema keeps one plain object, so a generated client keeps one
    request model with each field optional."""
    for way in (*_WAYS, "reservationId"):
        field = schema["properties"][way]
        [given] = [option for option in field.pop("anyOf") if option != {"type": "null"}]
        field.pop("default", None)
        field.update(given)
    count = schema["properties"]["count"]
    count["minimum"], count["maximum"] = count.pop("ge"), count.pop("le")
    schema["examples"] = EXAMPLES


class PlaceWorkloadRequest(StrictBody):
    """The body of place: the scheduler's workload, whose org, at which tier, on which units
    (``unitIds``), or, as the audience's work on a reservation (``reservationId``), on
    ``count`` of its units the service chooses, taking lent ones back."""

    model_config = ConfigDict(json_schema_extra=_optional_fields)

    id: StrictStr = Field(pattern=RESOURCE_ID, description="the workload's id, unique on the node")
    kind: Literal["vm", "pod"]
    tier: Literal["spot", "reserved", "on-demand"]
    org_id: StrictStr = Field(alias="orgId", pattern=RESOURCE_ID)
    unit_ids: (
        Annotated[UnitIds, Field(min_length=1, max_length=MAX_UNITS, json_schema_extra=_UNIQUE)]
        | None
    ) = Field(
        default=None,
        alias="unitIds",
        description="units of this node, PCI addresses (compared case-insensitively); at most "
        f"{MAX_TAKE_BACK_UNITS} with reservationId. Exactly one of unitIds and count",
    )
    reservation_id: StrictStr | None = Field(
        default=None,
        alias="reservationId",
        pattern=RESOURCE_ID,
        description="the audience's work on this reservation (tier must be reserved): units "
        "it has lent are taken back in the same write",
    )
    count: Annotated[JsonInt, Field(ge=1, le=MAX_TAKE_BACK_UNITS)] | None = Field(
        default=None,
        description="only with reservationId, instead of unitIds: how many of its units, "
        "chosen by the service (free ones first, then lent ones taken back)",
    )


def parse_place_request(raw: RawBody) -> PlaceWorkloadRequest:
    """The validated placement, unit ids normalised; 400 ``invalid_request`` naming the
    field: not exactly one of ``unitIds`` and ``count``, ``count`` without
    ``reservationId``, a ``reservationId`` at a tier other than ``reserved``, or more than
    16 units with it."""
    request = required_body(raw, PlaceWorkloadRequest)
    nulls = {"unit_ids": "unitIds", "count": "count", "reservation_id": "reservationId"}
    if given_null := [
        name
        for field, name in nulls.items()
        if field in request.model_fields_set and getattr(request, field) is None
    ]:
        raise invalid_body([FieldProblem(name, "must not be null") for name in given_null])
    given = [
        way
        for way, value in zip(_WAYS, (request.unit_ids, request.count), strict=True)
        if value is not None
    ]
    if len(given) != 1:
        raise invalid_body(
            [FieldProblem(way, "give exactly one of unitIds and count") for way in given or _WAYS]
        )
    if request.reservation_id is None:
        if request.count is not None:
            raise invalid_body([FieldProblem("count", "count needs reservationId")])
    else:
        if request.tier != "reserved":
            raise invalid_body([FieldProblem("tier", "must be reserved with reservationId")])
        if request.unit_ids is not None and len(request.unit_ids) > MAX_TAKE_BACK_UNITS:
            raise invalid_body(
                [FieldProblem("unitIds", f"at most {MAX_TAKE_BACK_UNITS} units with reservationId")]
            )
    if request.unit_ids is None:
        return request
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})


def place_document(request: PlaceWorkloadRequest) -> object:
    """The body as an Idempotency-Key compares it: the fields not given left out, so that a
    placement without ``reservationId`` keeps the fingerprint it had before it existed (a
    key's record outlives a deploy)."""
    document = request.model_dump(mode="json", by_alias=True)
    optional = (*_WAYS, "reservationId")
    return {
        name: value for name, value in document.items() if name not in optional or value is not None
    }

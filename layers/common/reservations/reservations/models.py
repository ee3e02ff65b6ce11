"""The bodies of a reservation's create and cancel, parsed strictly (anything not understood
is a 400)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, StrictStr, WithJsonSchema

from reservations.kernel.bodies import (
    MAX_REASON,
    RawBody,
    StrictBody,
    UnitIds,
    invalid_body,
    optional_body,
    required_body,
    unit_ids_field,
)
from reservations.kernel.errors import FieldProblem
from reservations.kernel.ids import RESOURCE_ID, normalize_unit_id
from reservations.kernel.times import RFC3339, parse_given_time
from reservations.kernel.wire import NextCursor, WireModel
from reservations.nodes import ReservationView

_OrgIds = list[Annotated[StrictStr, Field(pattern=RESOURCE_ID)]]
# A time a request gives: RFC 3339 with an offset (the pattern the model checks; the document
# says ``date-time`` too, so a generated client takes a datetime).
GivenTime = Annotated[
    StrictStr, WithJsonSchema({"type": "string", "format": "date-time", "pattern": RFC3339})
]
MAX_ORGS = 50
MAX_CONTRACT_REF = 200


class CancelRequest(StrictBody):
    """The body of cancel: only an optional reason; no body at all means none."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        json_schema_extra={"examples": [{}, {"reason": "the lab ended its contract early"}]},
    )

    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON)


def parse_cancel_request(raw: RawBody) -> CancelRequest:
    """The validated cancel body; an absent or blank body is ``{}``; 400 naming the field."""
    return optional_body(raw, CancelRequest)


class CreateReservationRequest(StrictBody):
    """The body of a create: which units, for whom, who manages them, and the term."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "unitIds": ["0000:04:00.0", "0000:05:00.0"],
                    "allowedOrgIds": ["org-lab"],
                    "managingOrgIds": ["org-broker"],
                    "endsAt": "2027-12-01T00:00:00Z",
                    "contractRef": "C-2211",
                }
            ]
        },
    )

    unit_ids: UnitIds = unit_ids_field(
        "PCI addresses of this node's reservable units, no duplicates"
    )
    allowed_org_ids: _OrgIds = Field(
        alias="allowedOrgIds", min_length=1, max_length=MAX_ORGS,
        json_schema_extra={"uniqueItems": True}, description="the audience",
    )  # fmt: skip
    managing_org_ids: _OrgIds = Field(
        default_factory=list, alias="managingOrgIds", max_length=MAX_ORGS,
        json_schema_extra={"uniqueItems": True}, description="may release and reclaim",
    )  # fmt: skip
    starts_at: GivenTime | None = Field(
        default=None, alias="startsAt", pattern=RFC3339,
        description="RFC 3339 with an offset, within the years 1970-9999 in UTC; default "
        "now; at most 5 minutes in the past",
    )  # fmt: skip
    ends_at: GivenTime | None = Field(
        default=None, alias="endsAt", pattern=RFC3339,
        description="RFC 3339 with an offset, within the years 1970-9999 in UTC; at least 1 "
        "second after startsAt (times are kept to the second) and in the future; absent: "
        "open-ended",
    )  # fmt: skip
    contract_ref: StrictStr | None = Field(
        default=None, alias="contractRef", max_length=MAX_CONTRACT_REF
    )
    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON)

    def term(self) -> tuple[datetime | None, datetime | None]:
        """``startsAt`` and ``endsAt`` as times in UTC (already checked to be valid ones)."""
        return _moment(self.starts_at), _moment(self.ends_at)


def _moment(text: str | None) -> datetime | None:
    return None if text is None else parse_given_time(text)


def _create_problems(request: CreateReservationRequest) -> tuple[list[str], list[FieldProblem]]:
    """Unit ids lower-cased; duplicates (of units and of orgs) and impossible dates."""
    problems: list[FieldProblem] = []
    units: list[str] = []
    for index, unit_id in enumerate(request.unit_ids):
        canonical = normalize_unit_id(unit_id) or unit_id
        if canonical in units:
            problems.append(FieldProblem(f"unitIds[{index}]", f"duplicate of {canonical}"))
        units.append(canonical)
    for name, orgs in (("allowedOrgIds", request.allowed_org_ids),
                       ("managingOrgIds", request.managing_org_ids)):  # fmt: skip
        for index, org_id in enumerate(orgs):
            if org_id in orgs[:index]:
                problems.append(FieldProblem(f"{name}[{index}]", f"duplicate of {org_id}"))
    for name, text in (("startsAt", request.starts_at), ("endsAt", request.ends_at)):
        try:
            _moment(text)
        except ValueError as error:  # not a real date, or outside the years 1970-9999
            problems.append(FieldProblem(name, str(error)))
    return units, problems


def parse_create_request(raw: RawBody) -> CreateReservationRequest:
    """The validated create body, unit ids lower-cased; 400 naming the field."""
    request = required_body(raw, CreateReservationRequest)
    units, problems = _create_problems(request)
    if problems:
        raise invalid_body(problems)
    return request.model_copy(update={"unit_ids": units})


class FleetReservationPage(WireModel):
    """One page of the reservations the caller's org may see across the fleet, by
    ``endsAt`` (open-ended last), then node id, then id."""

    items: list[ReservationView]
    next_cursor: NextCursor = None

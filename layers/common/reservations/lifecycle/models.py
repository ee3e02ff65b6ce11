"""The bodies of a reservation's create, cancel and PATCH, parsed strictly (anything not
understood is a 400), and a reservation as the API shows it (every write on one answers
with it: ``views.reservation_view``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StrictStr, WithJsonSchema

from reservations.kernel.bodies import (
    MAX_REASON,
    RawBody,
    StrictBody,
    invalid_body,
    optional_body,
    required_body,
)
from reservations.kernel.errors import FieldProblem
from reservations.kernel.ids import RESOURCE_ID
from reservations.kernel.times import RFC3339, parse_given_time, term_problem
from reservations.kernel.wire import (
    CURSOR_EXAMPLE,
    NULL_SHOWN,
    NextCursor,
    ShowsNulls,
    Timestamp,
    WireModel,
)
from reservations.nodes import MAX_UNITS, UnitIds, normalize_unit_id, unit_ids_field

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


# The fields a PATCH may set to null (open-ended, no contract, no reason); any other null
# is a 400 naming the field.
NULLABLE = frozenset({"endsAt", "contractRef", "reason"})


def _never_null(schema: dict[str, Any]) -> None:
    """A field that may be absent but never null, as the document shows it: its type alone
    (the model reads null to tell it from absent, and refuses it), no default, and a list's
    bounds as an array's (without duplicates)."""
    schema.pop("default", None)
    for member in schema.pop("anyOf", []):
        if member.get("type") != "null":
            schema.update(member)
    if schema.get("type") == "array":
        for bound, items in (("minLength", "minItems"), ("maxLength", "maxItems")):
            if bound in schema:
                schema[items] = schema.pop(bound)
        schema["uniqueItems"] = True


class UpdateReservationRequest(StrictBody):
    """The body of a PATCH: a JSON object of changes, at least one, each optional. An absent
    field changes nothing; ``null`` (where allowed) removes the value."""

    model_config = ConfigDict(
        json_schema_extra={
            "minProperties": 1,
            "examples": [
                {"endsAt": "2028-06-01T00:00:00Z"},
                {"addUnitIds": ["0000:06:00.0"], "allowedOrgIds": ["org-lab", "org-lab-2"]},
                {"endsAt": None, "contractRef": None},
            ],
        },
    )

    ends_at: GivenTime | None = Field(
        default=None, alias="endsAt", pattern=RFC3339,
        description="RFC 3339 with an offset; after now and at least 1 second after "
        "startsAt; null: open-ended. Extending must not overlap another live reservation of "
        "its units",
    )  # fmt: skip
    starts_at: GivenTime | None = Field(
        default=None, alias="startsAt", pattern=RFC3339, json_schema_extra=_never_null,
        description="only while pending; RFC 3339 with an offset, at most 5 minutes in the "
        "past",
    )  # fmt: skip
    allowed_org_ids: _OrgIds | None = Field(
        default=None, alias="allowedOrgIds", min_length=1, max_length=MAX_ORGS,
        json_schema_extra=_never_null, description="the whole new audience",
    )  # fmt: skip
    managing_org_ids: _OrgIds | None = Field(
        default=None, alias="managingOrgIds", max_length=MAX_ORGS,
        json_schema_extra=_never_null, description="the whole new list of managers",
    )  # fmt: skip
    add_unit_ids: UnitIds | None = Field(
        default=None, alias="addUnitIds", min_length=1, max_length=MAX_UNITS,
        json_schema_extra=_never_null,
        description="reservable units of this node the reservation does not hold, free over "
        "its term",
    )  # fmt: skip
    remove_unit_ids: UnitIds | None = Field(
        default=None, alias="removeUnitIds", min_length=1, max_length=MAX_UNITS,
        json_schema_extra=_never_null,
        description="units of the reservation; at least one must remain (a removed unit "
        "leaves releasedUnitIds too; nothing on it is terminated)",
    )  # fmt: skip
    contract_ref: StrictStr | None = Field(
        default=None, alias="contractRef", max_length=MAX_CONTRACT_REF,
        description="null removes it",
    )  # fmt: skip
    reason: StrictStr | None = Field(
        default=None, max_length=MAX_REASON,
        description="the reservation's stored reason, and the event's; null removes it",
    )  # fmt: skip

    def given(self, alias: str) -> bool:
        """Whether the body names the field (``null`` included)."""
        return _FIELD_OF[alias] in self.model_fields_set

    def term(self) -> tuple[datetime | None, datetime | None]:
        """``startsAt`` and ``endsAt`` as times in UTC, None where absent or null."""
        return _moment(self.starts_at), _moment(self.ends_at)


_FIELD_OF = {
    (info.alias or name): name for name, info in UpdateReservationRequest.model_fields.items()
}


def _update_problems(request: UpdateReservationRequest) -> list[FieldProblem]:
    """No field, a null where none is allowed, duplicates, a unit both added and removed,
    impossible dates, an endsAt not after a startsAt given with it."""
    if not request.model_fields_set:
        return [FieldProblem("body", "names no change: give at least one field")]
    problems = [
        FieldProblem(alias, "must not be null")
        for alias, name in _FIELD_OF.items()
        if alias not in NULLABLE and name in request.model_fields_set
        and getattr(request, name) is None
    ]  # fmt: skip
    for alias, values in (("allowedOrgIds", request.allowed_org_ids),
                          ("managingOrgIds", request.managing_org_ids)):  # fmt: skip
        problems += _duplicates(alias, values or [], str)
    for alias, units in (("addUnitIds", request.add_unit_ids),
                         ("removeUnitIds", request.remove_unit_ids)):  # fmt: skip
        problems += _duplicates(alias, units or [], _unit)
    removed = {_unit(u) for u in request.remove_unit_ids or []}
    problems += [
        FieldProblem(f"addUnitIds[{index}]", f"{_unit(unit_id)} is also in removeUnitIds")
        for index, unit_id in enumerate(request.add_unit_ids or [])
        if _unit(unit_id) in removed
    ]
    problems += _term_problems(request)
    return problems


def _unit(unit_id: str) -> str:
    return normalize_unit_id(unit_id) or unit_id


def _duplicates(alias: str, values: list[str], canonical: Any) -> list[FieldProblem]:
    seen: list[str] = []
    problems = []
    for index, value in enumerate(values):
        if canonical(value) in seen:
            problems.append(FieldProblem(f"{alias}[{index}]", f"duplicate of {canonical(value)}"))
        seen.append(canonical(value))
    return problems


def _term_problems(request: UpdateReservationRequest) -> list[FieldProblem]:
    moments: dict[str, datetime | None] = {}
    problems = []
    for name, text in (("startsAt", request.starts_at), ("endsAt", request.ends_at)):
        try:
            moments[name] = _moment(text)
        except ValueError as error:  # not a real date, or outside the years 1970-9999
            problems.append(FieldProblem(name, str(error)))
    starts, ends = moments.get("startsAt"), moments.get("endsAt")
    if (
        not problems
        and starts is not None
        and ends is not None
        and (problem := term_problem(starts, ends))
    ):
        problems.append(FieldProblem("endsAt", problem))
    return problems


def parse_update_request(raw: RawBody) -> UpdateReservationRequest:
    """The validated PATCH body, unit ids lower-cased; 400 naming the field."""
    request = required_body(raw, UpdateReservationRequest)
    if problems := _update_problems(request):
        raise invalid_body(problems)
    update: dict[str, Any] = {}
    for name in ("add_unit_ids", "remove_unit_ids"):
        if (units := getattr(request, name)) is not None:
            update[name] = [_unit(u) for u in units]
    return request.model_copy(update=update) if update else request


# What the demo fleet's calls answer (README.md): each answer's examples, beside its fields.
_T0 = "2026-11-29T10:00:00Z"
_T1 = "2026-11-30T08:15:00Z"
_LENDING = {
    "auto": True,
    "idleSeconds": 900,
    "keepUnlent": 1,
    "noticeSeconds": 120,
    "minRunSeconds": 600,
    "relendAfterSeconds": 300,
}
_RESERVATION = {
    "id": "res-a-active",
    "nodeId": "node-a1",
    "status": "active",
    "startsAt": _T0,
    "endsAt": "2034-12-31T00:00:00Z",
    "allowedOrgIds": ["org-lab"],
    "managingOrgIds": ["org-broker"],
    "reservedUnitIds": ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"],
    "releasedUnitIds": ["0000:06:00.0"],
    "contractRef": "lab-2026-q4",
    "topologyGen": 4,
    "lending": _LENDING,
    "createdAt": _T0,
    "updatedAt": _T1,
    "etag": "3f1c9a27d05e84b6c2aa",
}


class LendingPolicyView(WireModel):
    """A reservation's lending policy, every field given (the defaults filled in)."""

    EXAMPLES: ClassVar[list[Any]] = [_LENDING]

    auto: bool = Field(description="idle units are lent, and kept lent, by the service")
    idle_seconds: int = Field(description="how long a unit stays idle before it is lent")
    keep_unlent: int = Field(
        description="never lends a unit if fewer than this many of the reservation's units "
        "would stay unreleased"
    )
    notice_seconds: int = Field(
        description="the notice promised to every spot workload placed on its lent units"
    )
    min_run_seconds: int = Field(
        description="the minimum run promised to them: no reclaim stops one sooner"
    )
    relend_after_seconds: int = Field(
        description="the wait before a unit taken back is lent again (doubled for each "
        "take-back within an hour of its last lending, up to an hour)"
    )


class ReservationView(ShowsNulls):
    """A reservation as the API shows it (effective status, sorted unit ids)."""

    EXAMPLES: ClassVar[list[Any]] = [_RESERVATION, {**_RESERVATION, "lending": None}]

    id: str
    node_id: str
    status: Literal["pending", "active", "expired", "cancelled", "needs-review"]
    starts_at: Timestamp
    ends_at: Timestamp | None = None
    allowed_org_ids: list[str]
    managing_org_ids: list[str]
    reserved_unit_ids: list[str]
    released_unit_ids: list[str]
    contract_ref: str | None = None
    reason: str | None = None
    topology_gen: int | None = None
    lending: LendingPolicyView | None = Field(
        default=None,
        description="its lending policy (PUT .../lending), null when it has none",
        json_schema_extra=NULL_SHOWN,
    )
    created_at: Timestamp
    updated_at: Timestamp
    etag: str = Field(
        description="the reservation's version tag: its ETag header without the quotes; "
        "changes whenever anything else here does (its effective status too), and only then"
    )


class ReservationPage(WireModel):
    """One page of a node's reservations, sorted by id."""

    EXAMPLES: ClassVar[list[Any]] = [{"items": [_RESERVATION], "nextCursor": CURSOR_EXAMPLE}]

    items: list[ReservationView]
    next_cursor: NextCursor = None


class FleetReservationPage(WireModel):
    """One page of the reservations the caller's org may see across the fleet, by
    ``endsAt`` (open-ended last), then node id, then id."""

    EXAMPLES: ClassVar[list[Any]] = [
        {"items": [ReservationView.EXAMPLES[0]], "nextCursor": CURSOR_EXAMPLE}
    ]

    items: list[ReservationView]
    next_cursor: NextCursor = None


class ReaffirmRequest(StrictBody):
    """``POST .../reaffirm``: only an optional reason; no body at all means none."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{}, {"reason": "the GPUs were re-seated, same units"}]}
    )

    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON)


def parse_reaffirm_request(raw: RawBody) -> ReaffirmRequest:
    """The validated re-affirm body; an absent or blank body is ``{}``."""
    return optional_body(raw, ReaffirmRequest)

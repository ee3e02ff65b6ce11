"""Request bodies, parsed strictly: anything not understood is a 400.

Unknown fields are errors on purpose: ``{"dryrun": true}`` must never be read as a real
reclaim. Booleans must be JSON booleans, unit ids PCI addresses (compared lower-case).
A body is at most 64 KiB once decoded, UTF-8, and JSON as RFC 8259 has it (no NaN); every
check is linear in its size, so no body, however built, is slow to refuse.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    WithJsonSchema,
)

from reservations.kernel.errors import (
    FieldProblem,
    InvalidRequest,
    UnsupportedMediaType,
    field_path,
)
from reservations.kernel.ids import PCI_ADDRESS, RESOURCE_ID, normalize_unit_id
from reservations.kernel.times import RFC3339, parse_given_time

MAX_UNITS = 32
MAX_REASON = 1000
MAX_BODY_BYTES = 64 * 1024  # of the decoded body
MAX_INT_DIGITS = 100
MAX_REPORTED_PROBLEMS = 20

_Body = TypeVar("_Body", bound=BaseModel)


def _whole_number(value: Any) -> Any:
    # JSON has one number type: 1.0 is the integer 1 to JSON Schema, and so to the spec.
    # Anything else (1.5, true, "1") goes on to the strict check, which refuses it.
    if type(value) is float and value.is_integer():
        return int(value)
    return value


# An integer field of a body: an integral number, written 1 or 1.0 (JSON Schema's integer).
JsonInt = Annotated[StrictInt, BeforeValidator(_whole_number)]


# ``unitIds``: PCI addresses, compared case-insensitively (and answered lower-case).
UnitIds = list[Annotated[StrictStr, Field(pattern=PCI_ADDRESS)]]


def unit_ids_field(description: str) -> Any:
    """A body's ``unitIds``: 1 to MAX_UNITS of them, no duplicates."""
    return Field(
        alias="unitIds",
        min_length=1,
        max_length=MAX_UNITS,
        json_schema_extra={"uniqueItems": True},
        description=description,
    )


class StrictBody(BaseModel):
    """Every request body: unknown fields refused, no coercion, read only; a subclass's own
    config (its examples) adds to this one."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


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


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A set, not keys.count(): an object with n keys must cost n, not n * n.
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise InvalidRequest(
                f"field {key} appears twice", [FieldProblem(key, "appears more than once")]
            )
        seen.add(key)
    return dict(pairs)


def _no_constants(name: str) -> Any:
    # Python's json reads NaN and Infinity; RFC 8259 does not, and neither do we.
    raise InvalidRequest(
        f"request body is not valid JSON: {name} is not a JSON value",
        [FieldProblem("body", f"{name} is not a JSON value")],
    )


def _bounded_int(literal: str) -> int:
    # No field takes a long number; refuse it before int() spends time on it.
    if len(literal.lstrip("-")) > MAX_INT_DIGITS:
        raise InvalidRequest(
            "request body has a number too long to read",
            [FieldProblem("body", f"has a number of more than {MAX_INT_DIGITS} digits")],
        )
    return int(literal)


@dataclass(frozen=True)
class RawBody:
    """A request body as API Gateway hands it over: text, or base64 when it says so, and
    the media type the request declared it as (its ``Content-Type``; None: not declared)."""

    text: str | None
    base64_encoded: bool = False
    content_type: str | None = None


def is_json_media_type(content_type: str | None) -> bool:
    """Whether a declared ``Content-Type`` says JSON: ``application/json`` with any
    parameters (a charset), in any case; none declared is read as JSON."""
    if content_type is None:
        return True
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def _bad_body(problem: str) -> InvalidRequest:
    return InvalidRequest(f"request body {problem}", [FieldProblem("body", problem)])


def decode_body(raw: RawBody) -> str | None:
    """The body as text; 415 when declared as anything but JSON; 400 naming ``body`` if not
    base64 where marked, too large or not UTF-8."""
    if not raw.text:
        return None
    if not is_json_media_type(raw.content_type):
        raise UnsupportedMediaType()
    try:
        data = (
            base64.b64decode(raw.text, validate=True)
            if raw.base64_encoded
            else raw.text.encode("utf-8")
        )
    except UnicodeEncodeError as error:  # text carrying lone surrogates
        raise _bad_body("is not valid UTF-8") from error
    except ValueError as error:  # binascii.Error, or characters outside ASCII
        raise _bad_body("is not valid base64") from error
    if len(data) > MAX_BODY_BYTES:
        raise _bad_body(f"is larger than {MAX_BODY_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _bad_body("is not valid UTF-8") from error


def _invalid(problems: list[FieldProblem]) -> InvalidRequest:
    # A body of thousands of unknown fields must not become a response a hundred times larger.
    shown = problems[:MAX_REPORTED_PROBLEMS]
    more = f" (and {len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
    text = ", ".join(p.field + " " + p.problem for p in shown)
    return InvalidRequest(f"invalid request: {text}{more}", shown)


def _json_object(body: str) -> dict[str, Any]:
    try:
        document = json.loads(
            body,
            object_pairs_hook=_no_duplicate_keys,
            parse_constant=_no_constants,
            parse_int=_bounded_int,
        )
    except (ValueError, RecursionError) as error:  # RecursionError: nesting too deep
        raise _bad_body("is not valid JSON") from error
    if not isinstance(document, dict):
        raise InvalidRequest(
            "request body must be a JSON object", [FieldProblem("body", "is not a JSON object")]
        )
    return document


def _normalized(request: CapacityRequest) -> CapacityRequest:
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})


def normalized_unit_ids(unit_ids: list[str]) -> list[str]:
    """``unitIds`` lower-cased; 400 naming each one that is not a PCI address or repeats."""
    problems = []
    normalized: list[str] = []
    for index, unit_id in enumerate(unit_ids):
        canonical = normalize_unit_id(unit_id)
        if canonical is None:
            problems.append(
                FieldProblem(f"unitIds[{index}]", "must be a PCI address dddd:bb:dd.f in hex")
            )
        elif canonical in normalized:
            problems.append(FieldProblem(f"unitIds[{index}]", f"duplicate of {canonical}"))
        normalized.append(canonical or unit_id)
    if problems:
        raise _invalid(problems)
    return normalized


def validated(model: type[_Body], document: dict[str, Any]) -> _Body:
    """The document as ``model``; 400 naming each field that is wrong."""
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise _invalid(
            [
                FieldProblem(field_path(e["loc"]) or "body", e["msg"])
                for e in error.errors(include_url=False, include_input=False)
            ]
        ) from error


def required_body(raw: RawBody, model: type[_Body]) -> _Body:
    """The body as ``model``; 400 naming ``body`` when there is none."""
    body = decode_body(raw)
    if not body or not body.strip():
        raise InvalidRequest("request body is required", [FieldProblem("body", "is empty")])
    return validated(model, _json_object(body))


def optional_body(raw: RawBody, model: type[_Body]) -> _Body:
    """The body as ``model``; an absent or blank body is ``{}``."""
    body = decode_body(raw)
    return validated(model, _json_object(body) if body and body.strip() else {})


def parse_capacity_request(raw: RawBody) -> CapacityRequest:
    """The validated release or reclaim body, unit ids normalised; 400 naming the field."""
    return _normalized(required_body(raw, CapacityRequest))


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


class PlaceWorkloadRequest(StrictBody):
    """The body of place: the scheduler's workload, whose org, at which tier, on which units."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "vm-42",
                    "kind": "vm",
                    "tier": "spot",
                    "orgId": "org-spotbuyer",
                    "unitIds": ["0000:06:00.0"],
                }
            ]
        },
    )

    id: StrictStr = Field(pattern=RESOURCE_ID, description="the workload's id, unique on the node")
    kind: Literal["vm", "pod"]
    tier: Literal["spot", "reserved", "on-demand"]
    org_id: StrictStr = Field(alias="orgId", pattern=RESOURCE_ID)
    unit_ids: UnitIds = unit_ids_field(
        "units of this node, PCI addresses (compared case-insensitively)"
    )


def parse_place_request(raw: RawBody) -> PlaceWorkloadRequest:
    """The validated placement, unit ids normalised; 400 ``invalid_request`` naming the field."""
    request = required_body(raw, PlaceWorkloadRequest)
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})


MAX_ORGS = 50
MAX_CONTRACT_REF = 200
_OrgIds = list[Annotated[StrictStr, Field(pattern=RESOURCE_ID)]]


# A time a request gives: RFC 3339 with an offset (the pattern the model checks; the document
# says ``date-time`` too, so a generated client takes a datetime).
GivenTime = Annotated[
    StrictStr, WithJsonSchema({"type": "string", "format": "date-time", "pattern": RFC3339})
]


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
        raise _invalid(problems)
    return request.model_copy(update={"unit_ids": units})

"""The reclaim request body, parsed strictly: anything not understood is a 400.

Unknown fields are errors on purpose: ``{"dryrun": true}`` must never be read as a real
reclaim. Booleans must be JSON booleans, unit ids PCI addresses (compared lower-case).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from reservations.models.errors import FieldProblem, InvalidRequest
from reservations.rules.ids import normalize_unit_id

MAX_UNITS = 32
MAX_REASON = 1000
PCI_ADDRESS = r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$"


class ReclaimRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        populate_by_name=True,
        json_schema_extra={
            "examples": [
                {"unitIds": ["0000:04:00.0", "0000:05:00.0"], "dryRun": True},
                {"unitIds": ["0000:04:00.0"], "reason": "the lab needs its GPUs back"},
            ]
        },
    )

    unit_ids: list[Annotated[StrictStr, Field(pattern=PCI_ADDRESS)]] = Field(
        alias="unitIds",
        min_length=1,
        max_length=MAX_UNITS,
        json_schema_extra={"uniqueItems": True},
        description="PCI addresses dddd:bb:dd.f (hex, compared case-insensitively), no duplicates",
    )
    dry_run: StrictBool = Field(default=False, alias="dryRun")
    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    for key in keys:
        if keys.count(key) > 1:
            raise InvalidRequest(
                f"field {key} appears twice", [FieldProblem(key, "appears more than once")]
            )
    return dict(pairs)


def _field_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


@dataclass(frozen=True)
class RawBody:
    """A request body as API Gateway hands it over: text, or base64 when it says so."""

    text: str | None
    base64_encoded: bool = False


def decode_body(raw: RawBody) -> str | None:
    """The body as text."""
    if raw.text is None or not raw.base64_encoded:
        return raw.text
    return base64.b64decode(raw.text).decode("utf-8")


def parse_reclaim_request(raw: RawBody) -> ReclaimRequest:
    """The validated request, unit ids normalised; 400 ``invalid_request`` naming the field."""
    body = decode_body(raw)
    if not body or not body.strip():
        raise InvalidRequest("request body is required", [FieldProblem("body", "is empty")])
    try:
        document = json.loads(body, object_pairs_hook=_no_duplicate_keys)
    except (ValueError, RecursionError) as error:
        raise InvalidRequest(
            "request body is not valid JSON", [FieldProblem("body", "is not valid JSON")]
        ) from error
    if not isinstance(document, dict):
        raise InvalidRequest(
            "request body must be a JSON object", [FieldProblem("body", "is not a JSON object")]
        )
    try:
        request = ReclaimRequest.model_validate(document)
    except ValidationError as error:
        problems = [
            FieldProblem(_field_path(tuple(e["loc"])), e["msg"])
            for e in error.errors(include_url=False, include_input=False)
        ]
        raise InvalidRequest(
            f"invalid request: {', '.join(p.field + ' ' + p.problem for p in problems)}",
            problems,
        ) from error

    problems = []
    normalized: list[str] = []
    for index, unit_id in enumerate(request.unit_ids):
        canonical = normalize_unit_id(unit_id)
        if canonical is None:
            problems.append(
                FieldProblem(f"unitIds[{index}]", "must be a PCI address dddd:bb:dd.f in hex")
            )
        elif canonical in normalized:
            problems.append(FieldProblem(f"unitIds[{index}]", f"duplicate of {canonical}"))
        normalized.append(canonical or unit_id)
    if problems:
        raise InvalidRequest(
            f"invalid request: {', '.join(p.field + ' ' + p.problem for p in problems)}",
            problems,
        )
    return request.model_copy(update={"unit_ids": normalized})

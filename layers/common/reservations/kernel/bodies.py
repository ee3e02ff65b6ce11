"""Request bodies, parsed strictly: anything not understood is a 400.

Unknown fields are errors on purpose: ``{"dryrun": true}`` must never be read as a real
write. Booleans must be JSON booleans.
A body is at most 64 KiB once decoded, UTF-8, and JSON as RFC 8259 has it (no NaN); every
check is linear in its size, so no body, however built, is slow to refuse.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StrictInt,
    ValidationError,
)

from reservations.kernel.errors import (
    FieldProblem,
    InvalidRequest,
    UnsupportedMediaType,
    field_path,
)

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


class StrictBody(BaseModel):
    """Every request body: unknown fields refused, no coercion, read only; a subclass's own
    config (its examples) adds to this one."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


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


def invalid_body(problems: list[FieldProblem]) -> InvalidRequest:
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


def validated(model: type[_Body], document: dict[str, Any]) -> _Body:
    """The document as ``model``; 400 naming each field that is wrong."""
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise invalid_body(
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

"""The API's request and response shapes (camelCase on the wire, absent rather than null)."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from reservations.kernel.errors import ERRORS, ApiError

# A time as every response gives it: RFC 3339 in UTC (``2026-11-30T10:00:00Z``).
Timestamp = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
# A page's way on to the next one, the same on every list.
NextCursor = Annotated[
    str | None, Field(description="opaque; pass as ?cursor= for the next page; absent on the last")
]


# The mark of a response field whose "none" the contract shows as ``null`` rather than by
# leaving it out (``Field(json_schema_extra=NULL_SHOWN)`` on a :class:`ShowsNulls` model):
# always sent; its schema nullable, and not required, so that a client reading an answer
# from a server older than the field still reads it.
_SHOWN = "x-null-shown"
NULL_SHOWN: dict[str, Any] = {_SHOWN: True}
# Their wire names: the resolver's serializer, which drops the other nulls, keeps these.
SHOWN_NULLS: set[str] = set()


def absent_not_null(schema: dict[str, Any]) -> None:
    """A response's optional field is left out, never ``null``: its schema says so (optional,
    not nullable), so a generated client does not type it as "None or value". A field
    marked :data:`NULL_SHOWN` is the exception: nullable."""
    for field in schema.get("properties", {}).values():
        if field.pop(_SHOWN, False):
            field.pop("default", None)
            continue
        options = field.get("anyOf")
        if options and {"type": "null"} in options:
            rest = [option for option in options if option != {"type": "null"}]
            del field["anyOf"]
            field.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
            if "default" in field and field["default"] is None:
                del field["default"]


# A page's cursor as the examples show one (opaque: signed JSON, base64url).
CURSOR_EXAMPLE = "eyJhZnRlciI6InJlcy1hLWFjdGl2ZSJ9.c2lnbmF0dXJl"


def answer_schema(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """An answer's schema: its optional fields absent, not null (:func:`absent_not_null`),
    and the examples the model declares beside its fields (``EXAMPLES``, its own: a
    subclass declares its own), which the OpenAPI document shows."""
    absent_not_null(schema)
    examples = model.__dict__.get("EXAMPLES")
    if examples:
        schema["examples"] = list(examples)


class WireModel(BaseModel):
    """Base of every response: camelCase on the wire. A field left None is absent from the
    response body, never ``null`` (the resolver's serializer drops them). Each declares its
    examples beside its fields (``EXAMPLES``: what the demo fleet's calls answer)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        json_schema_extra=answer_schema,
    )


class ShowsNulls(WireModel):
    """A response with fields marked :data:`NULL_SHOWN`: each is in the body, ``null`` when
    None, where every other None field is left out."""

    _nulls_shown: ClassVar[tuple[tuple[str, str], ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls._nulls_shown = tuple(
            (name, field.alias or name)
            for name, field in cls.model_fields.items()
            if isinstance(field.json_schema_extra, dict) and field.json_schema_extra.get(_SHOWN)
        )
        SHOWN_NULLS.update(alias for _name, alias in cls._nulls_shown)

    # Unannotated return: an annotated one would stand for the model's schema in the
    # documents made from it (``Any`` would say nothing of its fields).
    @model_serializer(mode="wrap")
    def _with_nulls_shown(  # type: ignore[no-untyped-def]
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ):
        data = handler(self)
        for name, alias in self._nulls_shown:
            if getattr(self, name) is None:
                data[alias if info.by_alias else name] = None
        return data


# The kernel's own refusal as the example of every error (a slice's are in the contract's
# table and the OpenAPI document's error codes).
_DETAIL: dict[str, Any] = {"field": "limit", "problem": "Input should be less than or equal to 100"}


class ErrorDetail(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [_DETAIL]})

    field: str
    problem: str


# The id of the request in hand (API Gateway's), set by the HTTP layer for the request's
# duration: every error body names it, so a user can quote it to an operator.
REQUEST_ID: ContextVar[str | None] = ContextVar("request_id", default=None)


class _RegisteredCodes:
    """An error code's JSON schema: one of the codes :data:`ERRORS` holds when the schema is
    made, not when this module is imported (slices register their own codes; the document's
    maker has imported every slice by then)."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, _schema: CoreSchema, _handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "enum": list(dict.fromkeys(e.code for e in ERRORS))}


# An error's code: one of the contract's table (every code :data:`ERRORS` registers).
ErrorCode = Annotated[str, _RegisteredCodes]


class ErrorBody(BaseModel):
    """Every error response: ``{"error", "code"}`` plus ``details`` for validation errors,
    and ``requestId``: the id in the response's ``X-Request-Id`` and the logs."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True,
                              json_schema_extra=answer_schema)  # fmt: skip
    EXAMPLES: ClassVar[list[Any]] = [
        {
            "error": "invalid request: limit Input should be less than or equal to 100",
            "code": "invalid_request",
            "details": [_DETAIL],
            "requestId": "Jx3kPgB7oAMEbQw=",
        }
    ]

    error: str
    code: ErrorCode
    details: list[ErrorDetail] | None = None
    request_id: str | None = None


class ThrottledBody(BaseModel):
    """API Gateway's own 429 when the stage's rate limit is exceeded (not the API's error
    shape: the request never reached a function)."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"message": "Too Many Requests"}]})

    message: str = Field(examples=["Too Many Requests"])


def error_json(error: ApiError) -> str:
    """An error response's exact body: the one rendering for live answers and replays (a
    kept refusal keeps the first request's id, byte for byte)."""
    details = [ErrorDetail(field=d.field, problem=d.problem) for d in error.details]
    body = ErrorBody(
        error=error.message, code=error.code, details=details or None, request_id=REQUEST_ID.get()
    )
    return body.model_dump_json(by_alias=True, exclude_none=True)


def response_json(model: BaseModel) -> str:
    """A response's exact body (camelCase, absent rather than null): stored and replayed as is."""
    return model.model_dump_json(by_alias=True, exclude_none=True)

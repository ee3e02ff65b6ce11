"""How an endpoint of the API is declared, once, in its slice: its method and path as the
contract spells them, what the OpenAPI document says of it, what it answers besides its
success, its function and its slice's ports, and its use case (``use``): a write's
``WriteSpec`` (its refusals, named by its ``decide``'s return type, and whether it keeps an
Idempotency-Key are declared there, once), or a callable that answers one :class:`Call`.
Each slice declares its own endpoints (``<slice>/endpoints.py``, in its ``ENDPOINTS``); the
function (``kernel.http.functions``), the OpenAPI document, the stack's template and the
tests' lists are made from them. Nothing here is computed at import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from reservations.kernel.caller import Caller
from reservations.kernel.errors import (
    ERRORS,
    ApiError,
    Conflict,
    IdempotencyInProgress,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    PreconditionFailed,
    StorageLimit,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from reservations.kernel.grants import READ_API_KEYS, READ_KEY_RECORDS, WRITE_KEY_RECORDS, Grant
from reservations.kernel.pipeline import Route, WriteSpec
from reservations.kernel.ports import Ports

_PATH_ID = re.compile(r"\{(\w+)\}")

Errors = tuple[type[ApiError], ...]
# What a read answers besides its success (500 and 503 come always): the key, then the one
# 404; a page's query may be a 400 too.
READ: Errors = (Unauthorized, NotFound)
PAGE_READ: Errors = (InvalidRequest, *READ)
# What the write pipeline answers on every write, besides the use case's own refusals: the
# body (or a malformed Idempotency-Key), the key, the 404, and the race lost every time.
# A write that would grow an item past DynamoDB's limit is refused whole (storage_limit).
WRITE: Errors = (InvalidRequest, Unauthorized, NotFound, StorageLimit, Conflict)
# ... and on a write that keeps its answers under an Idempotency-Key.
KEYED_WRITE: Errors = (*WRITE, IdempotencyInProgress, IdempotencyKeyReused)


@dataclass(frozen=True)
class Link:
    """An operation a client calls next on what a success made: its operation id and its
    path (the made thing's id is the path's last id, taken from the body's ``id``)."""

    operation_id: str
    path: str

    @property
    def path_ids(self) -> tuple[str, ...]:
        return tuple(_PATH_ID.findall(self.path))


P = TypeVar("P", bound=Ports)


@dataclass(frozen=True)
class Call(Generic[P]):
    """One request, as a use case the write pipeline does not run (a read) receives it: the
    caller (its key already checked), the slice's ports, the path's ids, and the declared
    query parameters (absent or empty: None; a list's values comma-separated)."""

    caller: Caller
    ports: P
    ids: Mapping[str, str]
    query: Mapping[str, str | None]
    key: str | None = None  # the Idempotency-Key, where the route takes one


@dataclass(frozen=True, kw_only=True)
class ApiRoute:
    """One route: how it is called, what serves it, and how the OpenAPI document shows it."""

    function: str  # the Lambda function that serves it (its template block is made from this)
    method: str
    path: str  # /v1/nodes/{nodeId}/...: the contract's spelling
    summary: str
    operation_id: str
    success: str  # what the success response is
    response: Any = None  # its model; None: no body
    status: int = 200
    # Its use case: a write's spec (the pipeline runs it; its refusals and its key are
    # declared there), or a callable answering one call: a model, or an Outcome as rendered.
    use: WriteSpec[Any, Any, Any, Any] | Callable[[Call[Any]], Any]
    ports: Callable[[], Ports]  # the slice's real ports, made once per function instance
    # What its function may do besides reading the caller's key (and a keyed write's
    # records): its least privileges, from which its template block's policy is made.
    grants: tuple[Grant, ...] = ()
    # The stack's settings its function reads (environment variables; the template
    # generator knows each one's value).
    variables: tuple[str, ...] = ()
    # Every error it answers (500 and 503 aside), where it has no ``spec`` to say them.
    declared_errors: Errors = READ
    body: type[BaseModel] | None = None
    body_required: bool = True
    takes_key: bool = False  # without a ``spec``: takes an Idempotency-Key
    description: str | None = None
    created: str | None = None  # a 201 besides the success (a node registered)
    accepted: str | None = None  # a 202 besides the success (work that waits on something)
    located: bool = False  # its success names what it made in a Location header
    # The operations a client calls next on what the success made: the document's links.
    links: tuple[Link, ...] = ()
    tag: str = ""  # what the OpenAPI document groups it under (a generated client's module)
    # Its query parameters as the document declares them (``kernel.http.openapi``).
    query: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False)
    # A read of one versioned thing that honours If-None-Match: 304, its ETag, no body.
    if_none_match: bool = False

    @property
    def policy(self) -> tuple[Grant, ...]:
        """Every statement of its function's policy: its own grants, the caller's key read,
        and a keyed write's Idempotency-Key records."""
        keyed = (READ_KEY_RECORDS, WRITE_KEY_RECORDS) if self.spec and self.spec.keyed else ()
        return (*self.grants, READ_API_KEYS, *keyed)

    @property
    def spec(self) -> WriteSpec[Any, Any, Any, Any] | None:
        """A write's use case, which the pipeline runs; None for any other."""
        return self.use if isinstance(self.use, WriteSpec) else None

    @property
    def if_match(self) -> bool:
        """It honours If-Match: a write whose use case reads the version tag of what it acts
        on (``WriteSpec.etag``); it declares the header, and answers 412."""
        return self.spec is not None and self.spec.etag is not None

    @property
    def versioned(self) -> bool:
        """Its success carries one versioned thing, whose ``etag`` field the ``ETag``
        header repeats, quoted."""
        fields = getattr(self.response, "model_fields", None)
        return fields is not None and "etag" in fields

    @property
    def keyed(self) -> bool:
        """It takes an Idempotency-Key (a write's, unless its use case keeps none: a PUT)."""
        return self.spec.keyed if self.spec is not None else self.takes_key

    @property
    def errors(self) -> Errors:
        """What it answers besides its success (500 and 503 aside): a write, what the
        pipeline answers and its use case's refusals; any other, what it declares."""
        if self.spec is None:
            return self.declared_errors
        pipeline = KEYED_WRITE if self.spec.keyed else WRITE
        if self.if_match:
            pipeline = (*pipeline, PreconditionFailed)
        return (*pipeline, *(error for error in self.spec.refusals if error not in pipeline))

    @property
    def error_classes(self) -> Errors:
        """The errors it answers (500 and 503 aside): a route that takes a body also
        answers 415 for one declared as anything but JSON."""
        return (*self.errors, *((UnsupportedMediaType,) if self.body is not None else ()))

    @property
    def error_statuses(self) -> tuple[int, ...]:
        """The statuses of the errors it answers (500 and 503 aside)."""
        return tuple(sorted({error.status for error in self.error_classes}))

    def error_codes(self, status: int) -> tuple[str, ...]:
        """The codes it may answer with ``status``, in the order of the contract's table."""
        return tuple(error.code for error in self.answering(status))

    def answering(self, status: int) -> Errors:
        """The errors it may answer with ``status``, in the order of the contract's table
        (500: the internal error; 503: AWS did not answer in time, or could not serve it then)."""
        if status == 500:
            return (ApiError,)
        if status == 503:
            return (Unavailable,)
        answering = (error for error in self.error_classes if error.status == status)
        return tuple(sorted(answering, key=ERRORS.index))

    @property
    def path_ids(self) -> tuple[str, ...]:
        """The names of the path's ids, in order."""
        return tuple(_PATH_ID.findall(self.path))

    @property
    def rule(self) -> str:
        """The path as the resolver matches it (``<nodeId>``)."""
        return _PATH_ID.sub(r"<\1>", self.path)

    def at(self, **ids: str) -> Route:
        """The route as one request came by it, with its path's ids."""
        return Route(self.method, self.path, ids)


def read_route(**declared: Any) -> ApiRoute:
    """A read of what the path names: a GET, so no key; no query, so no 400."""
    return ApiRoute(method="GET", declared_errors=READ, **declared)


def page_route(*, variables: tuple[str, ...] = (), **declared: Any) -> ApiRoute:
    """A page of a list: a GET, so no key; its query (``limit``, ``cursor`` and its own
    filters) may be a 400; its cursors are signed (``CURSOR_SIGNING_KEY``)."""
    signed = ("CURSOR_SIGNING_KEY", *variables)
    return ApiRoute(method="GET", declared_errors=PAGE_READ, variables=signed, **declared)

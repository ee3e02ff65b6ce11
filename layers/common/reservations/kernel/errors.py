"""Errors with the contract's status and code; the HTTP layer maps them to responses.

Each error code is defined once, here, by its class: its status, its code, whether a keyed
request keeps it for replay (``kept``: the contract's "Idempotency" list), and what the
OpenAPI document says of it (its docstring, as ``documented``). ``kernel.idempotency.rules`` and
``kernel.http.openapi`` derive from :data:`ERRORS`; nothing else spells a code's facts again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar


def field_path(location: Iterable[int | str]) -> str:
    """A validation error's location as every response and message names it: ``unitIds[2]``,
    ``header.Idempotency-Key``; empty for the document itself."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


@dataclass(frozen=True)
class FieldProblem:
    field: str
    problem: str


class ApiError(Exception):
    """An error a client may see, as the contract's table has it: every subclass is one row
    of the table, registered in :data:`ERRORS` in the order the document lists them, with
    its status and code, whether a keyed request keeps it (``kept``), and, as its
    docstring, what the OpenAPI document says of it."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal"
    # Whether a request with an Idempotency-Key keeps this answer and replays it: only
    # answers that reached a decision about the domain.
    kept: ClassVar[bool] = False
    documented: ClassVar[str] = "never for anything a client sent"
    # Seconds a client should wait before it tries again (``Retry-After``); None: not sent.
    retry_after: ClassVar[int | None] = None

    def __init_subclass__(
        cls, *, status: int, code: str, kept: bool = False, retry_after: int | None = None
    ) -> None:
        super().__init_subclass__()
        cls.status, cls.code, cls.kept, cls.retry_after = status, code, kept, retry_after
        cls.documented = " ".join((cls.__doc__ or "").split())
        ERRORS.append(cls)

    def __init__(self, message: str, details: list[FieldProblem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []
        # Headers this answer carries besides Content-Type and the class's Retry-After
        # (a 412's current ETag).
        self.headers: tuple[tuple[str, str], ...] = ()


# Every error code's class, the base's 500 first; subclasses join as they are defined.
ERRORS: list[type[ApiError]] = [ApiError]


class InvalidRequest(ApiError, status=400, code="invalid_request"):
    """the body is not a JSON object of the documented fields"""


class Unauthorized(ApiError, status=401, code="unauthorized"):
    """missing, malformed, unknown, revoked or expired key"""

    def __init__(self) -> None:
        # One message for every cause, so a response never tells which keys exist.
        super().__init__("missing or invalid API key")


class NotFound(ApiError, status=404, code="not_found"):
    """unknown, not visible, or the key lacks the permission (identical)"""

    def __init__(self) -> None:
        # Unknown, invisible and forbidden must look the same: one message for all.
        super().__init__("not found")


class ReservationNotActive(ApiError, status=409, code="reservation_not_active", kept=True):
    """release, reclaim: the reservation is not active, or its term does not include now"""


class UnitsUnavailable(ApiError, status=409, code="units_unavailable", kept=True):
    """create, PATCH, place, node update: a unit is held by another live reservation,
    claimed, or withheld; details name each unit and why"""


class WorkloadExists(ApiError, status=409, code="workload_exists", kept=True):
    """place: the workload id is already on the node"""


class StaleTopology(ApiError, status=409, code="stale_topology", kept=True):
    """node update: topologyGen is lower than the stored one, or equal with other units"""


class ReservationNotInReview(ApiError, status=409, code="reservation_not_in_review", kept=True):
    """re-affirm: the reservation is not needs-review"""


class ReservationNotChangeable(ApiError, status=409, code="reservation_not_changeable", kept=True):
    """PATCH: the reservation is not pending or active, or its stored state does not allow
    the change (startsAt once active, an endsAt not after startsAt, removing every unit,
    adding a unit it holds, more than 32 units after the change); details name the field"""


class SubscriptionLimit(ApiError, status=409, code="subscription_limit"):
    """subscribe: the org already has 10 webhook subscriptions"""


class PlanStale(ApiError, status=409, code="plan_stale", kept=True):
    """reclaim with a planId: something the plan was bound to changed (a placement, a
    release, another reclaim, an end, the plan's own apply), or the plan expired; nothing
    was done; the message (and details, when it can) name what changed"""


class NotEnoughReleased(ApiError, status=409, code="not_enough_released", kept=True):
    """reclaim by count: fewer released units than asked; the message says how many there
    are"""


class DeliveryNotFailed(ApiError, status=409, code="delivery_not_failed"):
    """webhook delivery retry: the delivery is not failed (pending: it is retried on its
    schedule; delivered: there is nothing to send again); the message names its state. Not
    kept under an Idempotency-Key: a retry keeps nothing, and a pending delivery may fail
    later and then be retried"""


class SubscriptionDisabled(ApiError, status=409, code="subscription_disabled"):
    """webhook delivery retry: the subscription is disabled (5 days of failed deliveries);
    nothing is queued. It is re-enabled by deleting it and subscribing again. Not kept under
    an Idempotency-Key"""


class StorageLimit(ApiError, status=409, code="storage_limit"):
    """a write would grow a stored item past DynamoDB's 400 KB item size (the node's list
    access item names every org its reservations name); nothing was written. Not kept
    under an Idempotency-Key: once reservations end and leave the history, it fits"""

    def __init__(self) -> None:
        super().__init__(
            "this write would make a stored record larger than DynamoDB's 400 KB item limit "
            "(the node's reservations name too many organisations); nothing was written"
        )


class Conflict(ApiError, status=409, code="conflict", retry_after=1):
    """the write kept losing to concurrent writers; the same key may retry and then act"""


class IdempotencyInProgress(ApiError, status=409, code="idempotency_in_progress", retry_after=1):
    """the same Idempotency-Key is still being processed"""


class PreconditionFailed(ApiError, status=412, code="precondition_failed"):
    """If-Match names none of the current version's tags (a weak tag never matches);
    nothing was done. The answer carries the current ETag. Never kept under an
    Idempotency-Key: the same key may be retried, and a retry whose first try committed
    gets that answer, never this"""

    def __init__(self, etag: tuple[str, str]) -> None:
        super().__init__("If-Match does not match the current ETag; nothing was done")
        self.headers = (etag,)


class UnitsNotInReservation(ApiError, status=422, code="units_not_in_reservation", kept=True):
    """release, reclaim: some unitIds are not in the reservation's reservedUnitIds; PATCH:
    some removeUnitIds are not"""


class UnitsNotReservable(ApiError, status=422, code="units_not_reservable", kept=True):
    """create, PATCH addUnitIds, re-affirm: a unit is not on the node or not reservable;
    details say which"""


class UnitsNotSellable(ApiError, status=422, code="units_not_sellable", kept=True):
    """place: a unit is not on the node or not sellable; details say which and why"""


class IdempotencyKeyReused(ApiError, status=422, code="idempotency_key_reused"):
    """the same Idempotency-Key with a different request (never kept: the first answer
    stays the one a repeat of the first request gets)"""


class UnsupportedMediaType(ApiError, status=415, code="unsupported_media_type"):
    """the body is declared as something other than application/json (a charset parameter
    is fine; no Content-Type at all is read as JSON)"""

    def __init__(self) -> None:
        super().__init__(
            "request body must be application/json",
            [FieldProblem("header.Content-Type", "must be application/json")],
        )


class Unavailable(ApiError, status=503, code="internal", retry_after=2):
    """AWS did not answer within the call's time; retry (a POST with the same
    Idempotency-Key; a PUT as it was)"""

    def __init__(self) -> None:
        # AWS did not answer within the invocation: the contract's 5xx, in its shape.
        super().__init__("the service could not answer in time; try again")


def documented_errors(errors: Sequence[type[ApiError]]) -> str:
    """What the OpenAPI document says a response is that answers one of ``errors`` (all of
    one status): the one code with its ``documented`` text, or the codes named in the order
    of :data:`ERRORS`, then each with its text."""
    ordered = sorted(errors, key=ERRORS.index)
    if len(ordered) == 1:
        return f"{ordered[0].code}: {ordered[0].documented}"
    names = [error.code for error in ordered]
    listed = "\n".join(f"- `{error.code}`: {error.documented}" for error in ordered)
    return ", ".join(names[:-1]) + " or " + names[-1] + "\n\n" + listed

"""Errors with the contract's status and code; the HTTP layer maps them to responses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


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
    """An error a client may see: ``status`` and ``code`` come from the contract's table."""

    status: int = 500
    code: str = "internal"

    def __init__(self, message: str, details: list[FieldProblem] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []


class InvalidRequest(ApiError):
    status = 400
    code = "invalid_request"


class Unauthorized(ApiError):
    status = 401
    code = "unauthorized"

    def __init__(self) -> None:
        # One message for every cause, so a response never tells which keys exist.
        super().__init__("missing or invalid API key")


class NotFound(ApiError):
    """Unknown, invisible and forbidden must look the same: one message for all."""

    status = 404
    code = "not_found"

    def __init__(self) -> None:
        super().__init__("not found")


class Unavailable(ApiError):
    """AWS did not answer within the invocation: the contract's 5xx, in its shape."""

    status = 503
    code = "internal"

    def __init__(self) -> None:
        super().__init__("the service could not answer in time; try again")


class ReservationNotActive(ApiError):
    status = 409
    code = "reservation_not_active"


class Conflict(ApiError):
    status = 409
    code = "conflict"


class UnitsNotInReservation(ApiError):
    status = 422
    code = "units_not_in_reservation"


class UnitsUnavailable(ApiError):
    """Create: a unit is held by an overlapping live reservation or claimed by another org."""

    status = 409
    code = "units_unavailable"


class UnitsNotReservable(ApiError):
    """Create: a unit is not on the node, or not reservable; ``details`` say which and why."""

    status = 422
    code = "units_not_reservable"


class UnitsNotSellable(ApiError):
    """Place: a unit is not on the node, or not sellable; ``details`` say which and why."""

    status = 422
    code = "units_not_sellable"


class WorkloadExists(ApiError):
    """Place: a workload of this id is already on the node."""

    status = 409
    code = "workload_exists"


class StaleTopology(ApiError):
    """Node update: ``topologyGen`` lower than stored, or equal with different units."""

    status = 409
    code = "stale_topology"


class ReservationNotInReview(ApiError):
    """Re-affirm: the reservation is not ``needs-review``."""

    status = 409
    code = "reservation_not_in_review"


class IdempotencyInProgress(ApiError):
    status = 409
    code = "idempotency_in_progress"


class IdempotencyKeyReused(ApiError):
    status = 422
    code = "idempotency_key_reused"

"""Every error answer as an exception named after the contract's ``code`` (never a union to
inspect), and a webhook delivery that does not verify."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any


class ReservationsApiError(Exception):
    """An answer of 400 or more: its status, the contract's ``code``, the message, the
    ``details`` (field and problem), the request's id (quote it to an operator) and, where
    the API says when to try again, ``retry_after`` in seconds."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.status = status
        self.code = str(body.get("code", ""))
        self.message = str(body.get("error", body.get("message", "")))
        self.details: list[dict[str, str]] = list(body.get("details", []))
        self.request_id = body.get("requestId") or headers.get("x-request-id")
        after = headers.get("retry-after")
        self.retry_after = int(after) if after and after.isdigit() else None
        super().__init__(f"{status} {self.code}: {self.message}")


class InvalidRequest(ReservationsApiError): ...  # 400 invalid_request


class Unauthorized(ReservationsApiError): ...  # 401


class NotFound(ReservationsApiError): ...  # 404: unknown, not visible or not permitted


class UnsupportedMediaType(ReservationsApiError): ...  # 415


class ReservationNotActive(ReservationsApiError): ...  # 409


class StorageLimit(ReservationsApiError): ...  # 409: a stored record would pass 400 KB


class Conflict(ReservationsApiError): ...  # 409: retried by the client, then raised


class IdempotencyInProgress(ReservationsApiError): ...  # 409: retried, then raised


class UnitsUnavailable(ReservationsApiError): ...  # 409


class WorkloadExists(ReservationsApiError): ...  # 409


class StaleTopology(ReservationsApiError): ...  # 409


class ReservationNotInReview(ReservationsApiError): ...  # 409


class ReservationNotChangeable(ReservationsApiError): ...  # 409: details name the field


class SubscriptionLimit(ReservationsApiError): ...  # 409


class DeliveryNotFailed(ReservationsApiError): ...  # 409: a retry never succeeds; do not retry


class SubscriptionDisabled(ReservationsApiError): ...  # 409: delete and subscribe again


class PlanStale(ReservationsApiError): ...  # 409: nothing done; plan again (dry run)


class NotEnoughReleased(ReservationsApiError): ...  # 409: fewer released than the count


class NotEnoughUnits(ReservationsApiError): ...  # 409: a take-back's count it cannot give


class PreconditionFailed(ReservationsApiError):
    """412: If-Match named another version; nothing was done. ``etag``: the current one
    (unquoted, as a reservation's ``etag``): read it again, decide again."""

    def __init__(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        super().__init__(status, body, headers)
        current = headers.get("etag", "")
        self.etag = (
            current[1:-1] if len(current) >= 2 and current[0] == current[-1] == '"' else None
        )


class UnitsNotInReservation(ReservationsApiError): ...  # 422


class UnitsNotReservable(ReservationsApiError): ...  # 422


class UnitsNotSellable(ReservationsApiError): ...  # 422


class UnknownReservation(ReservationsApiError): ...  # 422: placement's reservationId


class OrgNotInAudience(ReservationsApiError): ...  # 422: placement's orgId, reservationId


class IdempotencyKeyReused(ReservationsApiError): ...  # 422


class TooManyRequests(ReservationsApiError): ...  # 429: API Gateway's throttling


class ServerError(ReservationsApiError): ...  # 5xx internal: retried, then raised


class InvalidWebhook(Exception):
    """A delivery that is not a signed event of ours: a missing header, no signature made
    with any of the secrets, a timestamp more than 5 minutes off, or a body that is not an
    event. Answer it with a 4xx and do not act on it."""


_BY_CODE: dict[str, type[ReservationsApiError]] = {
    "invalid_request": InvalidRequest,
    "unauthorized": Unauthorized,
    "not_found": NotFound,
    "unsupported_media_type": UnsupportedMediaType,
    "reservation_not_active": ReservationNotActive,
    "storage_limit": StorageLimit,
    "conflict": Conflict,
    "idempotency_in_progress": IdempotencyInProgress,
    "units_unavailable": UnitsUnavailable,
    "workload_exists": WorkloadExists,
    "stale_topology": StaleTopology,
    "reservation_not_in_review": ReservationNotInReview,
    "reservation_not_changeable": ReservationNotChangeable,
    "subscription_limit": SubscriptionLimit,
    "delivery_not_failed": DeliveryNotFailed,
    "subscription_disabled": SubscriptionDisabled,
    "plan_stale": PlanStale,
    "not_enough_released": NotEnoughReleased,
    "not_enough_units": NotEnoughUnits,
    "unknown_reservation": UnknownReservation,
    "org_not_in_audience": OrgNotInAudience,
    "precondition_failed": PreconditionFailed,
    "units_not_in_reservation": UnitsNotInReservation,
    "units_not_reservable": UnitsNotReservable,
    "units_not_sellable": UnitsNotSellable,
    "idempotency_key_reused": IdempotencyKeyReused,
    "internal": ServerError,
}


def error_body(content: bytes) -> dict[str, Any]:
    """An error answer's JSON object; empty when it is not one (a proxy's HTML page)."""
    try:
        body = json.loads(content)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def error_for(status: int, content: bytes, headers: dict[str, str]) -> ReservationsApiError:
    """The exception an error answer is: by its code, else by its status."""
    body = error_body(content)
    lowered = {name.lower(): value for name, value in headers.items()}
    kind = _BY_CODE.get(str(body.get("code")))
    if kind is None:
        kind = TooManyRequests if status == HTTPStatus.TOO_MANY_REQUESTS else ServerError
        kind = kind if status >= HTTPStatus.TOO_MANY_REQUESTS else ReservationsApiError
    return kind(status, body, lowered)

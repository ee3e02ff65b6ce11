"""The typed Python client of the reservations API, as a caller would like it: one method per
operation, the answer's model back (times as datetimes), iterators that page by themselves,
retries as the API's contract allows them, every error raised as a
:class:`ReservationsApiError` subclass named after its code, and :func:`verify_webhook` for
a receiver of the service's webhooks.

Hand-written over the generated ``reservations_api_client`` (``make client``), which it
never edits::

    from reservations_client import NotFound, Reservations
    from reservations_api_client.models import CreateReservationRequest

    api = Reservations("http://127.0.0.1:3000", "vl_local_only_owner")
    units = api.list_units("node-a1")
    made = api.create_reservation("node-a1", CreateReservationRequest(
        unit_ids=["0000:0c:00.0"], allowed_org_ids=["org-lab"]), idempotency_key="lab-1")
    for reservation in api.iter_reservations("node-a1", status="active"):
        ...
"""

from __future__ import annotations

from reservations_client.api import Reservations
from reservations_client.errors import (
    Conflict,
    DeliveryNotFailed,
    IdempotencyInProgress,
    IdempotencyKeyReused,
    InvalidRequest,
    InvalidWebhook,
    NotEnoughReleased,
    NotEnoughUnits,
    NotFound,
    OrgNotInAudience,
    PlanStale,
    PreconditionFailed,
    ReservationNotActive,
    ReservationNotChangeable,
    ReservationNotInReview,
    ReservationsApiError,
    ServerError,
    StaleTopology,
    StorageLimit,
    SubscriptionDisabled,
    SubscriptionLimit,
    TooManyRequests,
    Unauthorized,
    UnitsNotInReservation,
    UnitsNotReservable,
    UnitsNotSellable,
    UnitsUnavailable,
    UnsupportedMediaType,
    WorkloadExists,
)
from reservations_client.retries import NO_RETRIES, RetryPolicy
from reservations_client.webhooks import verify_webhook

__all__ = [
    "NO_RETRIES",
    "Conflict",
    "DeliveryNotFailed",
    "IdempotencyInProgress",
    "IdempotencyKeyReused",
    "InvalidRequest",
    "InvalidWebhook",
    "NotEnoughReleased",
    "NotEnoughUnits",
    "NotFound",
    "OrgNotInAudience",
    "PlanStale",
    "PreconditionFailed",
    "ReservationNotActive",
    "ReservationNotChangeable",
    "ReservationNotInReview",
    "Reservations",
    "ReservationsApiError",
    "RetryPolicy",
    "ServerError",
    "StaleTopology",
    "StorageLimit",
    "SubscriptionDisabled",
    "SubscriptionLimit",
    "TooManyRequests",
    "Unauthorized",
    "UnitsNotInReservation",
    "UnitsNotReservable",
    "UnitsNotSellable",
    "UnitsUnavailable",
    "UnsupportedMediaType",
    "WorkloadExists",
    "verify_webhook",
]

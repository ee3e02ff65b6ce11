"""Every route of the API, described once: its method and path as the contract spells them,
and what the OpenAPI document says of it. A function (``http.functions``) registers its own
route from here; the write pipeline gets the method, the path and its ids from it, so no
use case spells a URL; the tests build their events and requests from here too.

Nothing here is computed at import: a function builds only its own route's schemas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from reservations.events.models import EventPage
from reservations.kernel.bodies import (
    CancelRequest,
    CapacityRequest,
    CreateReservationRequest,
    PlaceWorkloadRequest,
)
from reservations.kernel.errors import (
    ERRORS,
    ApiError,
    Conflict,
    DeliveryNotFailed,
    IdempotencyInProgress,
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    ReservationNotActive,
    ReservationNotInReview,
    StaleTopology,
    StorageLimit,
    SubscriptionDisabled,
    SubscriptionLimit,
    Unauthorized,
    Unavailable,
    UnitsNotInReservation,
    UnitsNotReservable,
    UnitsNotSellable,
    UnitsUnavailable,
    UnsupportedMediaType,
    WorkloadExists,
)
from reservations.kernel.pipeline import Route
from reservations.kernel.wire import (
    NodeView,
    ReclaimResponse,
    ReservationPage,
    ReservationView,
    UnitView,
    WorkloadPage,
    WorkloadView,
)
from reservations.nodes.models.requests import NodeRequest, ReaffirmRequest
from reservations.webhooks.models.api import (
    NoBody,
    RetryQueued,
    SubscribeRequest,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
)
from reservations.webhooks.models.domain import DeliveryPage

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
class ApiRoute:
    """One route: how it is called, and how the OpenAPI document shows it."""

    function: str  # the function that serves it: functions/<function>/app.py
    method: str
    path: str  # /v1/nodes/{nodeId}/...: the contract's spelling
    summary: str
    operation_id: str
    success: str  # what the success response is
    response: Any = None  # its model; None: no body
    status: int = 200
    # Every error it answers (500 and 503 aside): the pipeline's, and its use case's own
    # refusals (a write's ``decide`` declares them in its return type; a test compares).
    errors: Errors = KEYED_WRITE
    body: type[BaseModel] | None = None
    body_required: bool = True
    keyed: bool = True  # takes an Idempotency-Key
    description: str | None = None
    created: str | None = None  # a 201 besides the success (a node registered)
    located: bool = False  # its success names what it made in a Location header
    # The operations (their operation ids) a client calls next on what the success made:
    # the OpenAPI document's links, the made thing's id taken from the body's ``id``.
    links: tuple[str, ...] = ()

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
        (500: the internal error; 503: AWS did not answer in time)."""
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
    def tag(self) -> str:
        """What the OpenAPI document groups it under (a generated client's module)."""
        for tag in ("webhooks", "events", "workloads", "reservations"):
            if f"/{tag}" in self.path:
                return tag
        return "nodes"

    @property
    def rule(self) -> str:
        """The path as the resolver matches it (``<nodeId>``)."""
        return _PATH_ID.sub(r"<\1>", self.path)

    def at(self, **ids: str) -> Route:
        """The route as one request came by it, with its path's ids."""
        return Route(self.method, self.path, ids)


def _get(
    function: str, path: str, summary: str, operation_id: str, success: str, response: Any
) -> ApiRoute:
    """A read of what the path names: a read, so no key; no query, so no 400."""
    return ApiRoute(function, "GET", path, summary, operation_id, success, response,
                    errors=READ, keyed=False)  # fmt: skip


def _list(
    function: str, path: str, summary: str, operation_id: str, success: str, response: Any
) -> ApiRoute:
    """A page of a list: a read, so no key; its query (limit, cursor) may be a 400."""
    return ApiRoute(function, "GET", path, summary, operation_id, success, response,
                    errors=PAGE_READ, keyed=False)  # fmt: skip


NODE = "/v1/nodes/{nodeId}"
RESERVATIONS = NODE + "/reservations"
RESERVATION = RESERVATIONS + "/{reservationId}"


def _capacity_write(
    function: str, summary: str, operation_id: str, success: str, response: Any
) -> ApiRoute:
    """A release or a reclaim: a keyed POST on the reservation (``.../release``,
    ``.../reclaim``) naming its units, refused alike when the reservation is not active or a
    unit is not in it."""
    return ApiRoute(function, "POST", f"{RESERVATION}/{function}", summary, operation_id,
                    success, response, body=CapacityRequest,
                    errors=(*KEYED_WRITE, ReservationNotActive, UnitsNotInReservation))  # fmt: skip


LIST_UNITS = _get(
    "list_units",
    RESERVATIONS + "/units",
    "List a node's allocatable GPU units",
    "listUnits",
    "the node's units, sorted by id",
    list[UnitView],
)
RECLAIM = _capacity_write(
    "reclaim",
    "Reclaim released units and terminate the spot workloads on them",
    "reclaimUnits",
    "the reservation after the call, and the outcome",
    ReclaimResponse,
)
CREATE_RESERVATION = ApiRoute(
    "create_reservation",
    "POST",
    RESERVATIONS,
    "Reserve units of a node for an audience of orgs",
    "createReservation",
    "the new reservation; Location names it",
    ReservationView,
    status=201,
    errors=(*KEYED_WRITE, UnitsUnavailable, UnitsNotReservable),
    body=CreateReservationRequest,
    located=True,
    links=("getReservation", "releaseUnits", "reclaimUnits", "cancelReservation"),
)
GET_RESERVATION = _get(
    "get_reservation",
    RESERVATION,
    "Get one reservation of a node",
    "getReservation",
    "the reservation, with its effective status",
    ReservationView,
)
LIST_RESERVATIONS = _list(
    "list_reservations",
    RESERVATIONS,
    "List the reservations of a node the caller may see",
    "listReservations",
    "a page of reservations, sorted by id",
    ReservationPage,
)
RELEASE = _capacity_write(
    "release",
    "Lend reserved units to the spot market",
    "releaseUnits",
    "the reservation after the call (dry run: as it would be)",
    ReservationView,
)
CANCEL = ApiRoute(
    "cancel",
    "POST",
    RESERVATION + "/cancel",
    "Cancel a reservation: its units stop being governed; workloads keep running",
    "cancelReservation",
    "the cancelled reservation",
    ReservationView,
    errors=(*KEYED_WRITE, ReservationNotActive),
    body=CancelRequest,
    body_required=False,
)
PUT_NODE = ApiRoute(
    "put_node",
    "PUT",
    NODE,
    "Register a node or update its topology (operator only)",
    "putNode",
    "the node, updated",
    NodeView,
    errors=(*WRITE, StaleTopology, UnitsUnavailable),
    body=NodeRequest,
    keyed=False,
    description=(
        "PUT is idempotent by itself and takes no Idempotency-Key: a request carrying the "
        "header is answered exactly as one without it (the header is neither checked nor "
        "stored). A repeat of the stored node changes nothing and answers 200; a retry "
        "after a lost 201 answers 200."
    ),
    created="the node, registered",
)
REAFFIRM = ApiRoute(
    "reaffirm",
    "POST",
    RESERVATION + "/reaffirm",
    "Confirm a needs-review reservation on the node's current topology (operator only)",
    "reaffirmReservation",
    "the reservation, out of review",
    ReservationView,
    errors=(*KEYED_WRITE, ReservationNotInReview, UnitsNotReservable),
    body=ReaffirmRequest,
    body_required=False,
)
PLACE_WORKLOAD = ApiRoute(
    "place_workload",
    "POST",
    NODE + "/workloads",
    "Place a workload on units of a node (operator keys with workload.place)",
    "placeWorkload",
    "the workload, running",
    WorkloadView,
    status=201,
    errors=(*KEYED_WRITE, WorkloadExists, UnitsUnavailable, UnitsNotSellable),
    body=PlaceWorkloadRequest,
    links=("getWorkload", "endWorkload"),
)
END_WORKLOAD = ApiRoute(
    "end_workload",
    "DELETE",
    NODE + "/workloads/{workloadId}",
    "End a workload that stopped on its own: it leaves the node, its units are free",
    "endWorkload",
    "ended (no body)",
    status=204,
)


GET_NODE = _get(
    "get_node",
    NODE,
    "Get a node as PUT answers it (operator and the node's owner)",
    "getNode",
    "the node",
    NodeView,
)
LIST_WORKLOADS = _list(
    "list_workloads",
    NODE + "/workloads",
    "List the workloads of a node the caller may see",
    "listWorkloads",
    "a page of workloads, sorted by id",
    WorkloadPage,
)
GET_WORKLOAD = _get(
    "get_workload",
    NODE + "/workloads/{workloadId}",
    "Get one workload of a node",
    "getWorkload",
    "the workload, running or terminating",
    WorkloadView,
)


def _feed(function: str, path: str, summary: str, operation_id: str) -> ApiRoute:
    """An event feed: a page of events, in record order."""
    return _list(function, path, summary, operation_id, "events, in record order", EventPage)


NODE_EVENTS = _feed(
    "node_events",
    NODE + "/events",
    "The node's events the caller may see, oldest first",
    "listNodeEvents",
)
ORG_EVENTS = _feed(
    "org_events",
    "/v1/events",
    "Every event the caller's org may see, across nodes, oldest first",
    "listEvents",
)

WEBHOOKS = "/v1/webhooks"
WEBHOOK = WEBHOOKS + "/{subscriptionId}"

CREATE_WEBHOOK = ApiRoute(
    "create_webhook",
    "POST",
    WEBHOOKS,
    "Subscribe an endpoint to the caller's org's feed (at most 10 per org)",
    "createWebhook",
    "the subscription and its signing secret (shown this once); Location names it",
    SubscriptionWithSecret,
    status=201,
    errors=(*KEYED_WRITE, SubscriptionLimit),
    body=SubscribeRequest,
    links=("getWebhook", "rotateWebhookSecret", "listWebhookDeliveries", "deleteWebhook"),
)
LIST_WEBHOOKS = _list(
    "list_webhooks",
    WEBHOOKS,
    "List the caller's org's webhook subscriptions",
    "listWebhooks",
    "a page of subscriptions, sorted by id (no secrets)",
    SubscriptionPage,
)
GET_WEBHOOK = _get(
    "get_webhook",
    WEBHOOK,
    "Get one of the caller's org's webhook subscriptions",
    "getWebhook",
    "the subscription, active or disabled (no secret)",
    SubscriptionView,
)
DELETE_WEBHOOK = ApiRoute(
    "delete_webhook",
    "DELETE",
    WEBHOOK,
    "Delete a webhook subscription: nothing more is sent to it",
    "deleteWebhook",
    "deleted (no body)",
    status=204,
)
ROTATE_WEBHOOK_SECRET = ApiRoute(
    "rotate_webhook_secret",
    "POST",
    WEBHOOK + "/rotate-secret",
    "Give a subscription a new signing secret; the old one signs too for 24 hours",
    "rotateWebhookSecret",
    "the subscription and its new secret (shown this once)",
    SubscriptionWithSecret,
    body=NoBody,
    body_required=False,
)
LIST_DELIVERIES = _list(
    "list_webhook_deliveries",
    WEBHOOK + "/deliveries",
    "A subscription's recent delivery attempts, newest first",
    "listWebhookDeliveries",
    "a page of attempts, newest first",
    DeliveryPage,
)
RETRY_DELIVERY = ApiRoute(
    "retry_webhook_delivery",
    "POST",
    WEBHOOK + "/deliveries/{eventId}/retry",
    "Send a failed delivery again now (one more attempt)",
    "retryWebhookDelivery",
    "the attempt is queued: it is made within seconds",
    RetryQueued,
    status=202,
    # not kept: the same attempt; no conflict: the retry writes nothing that can race
    errors=(InvalidRequest, Unauthorized, NotFound, SubscriptionDisabled, DeliveryNotFailed),
    description=(
        "A retry is one attempt however often it is asked: a repeat, with or without the "
        "same Idempotency-Key, queues the same attempt, which is made once; the header is "
        "checked, and nothing needs keeping. A delivery that is not failed is a 409 "
        "delivery_not_failed naming its state (a pending one is retried on its schedule); "
        "one of a disabled subscription is a 409 subscription_disabled (re-enable it by "
        "deleting it and subscribing again). Neither carries Retry-After: asking again "
        "never succeeds. Nothing is queued for either."
    ),
)

# Every route, in the order the OpenAPI document is merged from its functions.
ALL = (
    LIST_UNITS,
    RECLAIM,
    CREATE_RESERVATION,
    GET_RESERVATION,
    LIST_RESERVATIONS,
    RELEASE,
    CANCEL,
    PLACE_WORKLOAD,
    END_WORKLOAD,
    PUT_NODE,
    REAFFIRM,
    NODE_EVENTS,
    ORG_EVENTS,
    CREATE_WEBHOOK,
    LIST_WEBHOOKS,
    GET_WEBHOOK,
    DELETE_WEBHOOK,
    ROTATE_WEBHOOK_SECRET,
    LIST_DELIVERIES,
    RETRY_DELIVERY,
    GET_NODE,
    LIST_WORKLOADS,
    GET_WORKLOAD,
)

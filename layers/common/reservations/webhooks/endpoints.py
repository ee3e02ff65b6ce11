"""The webhooks slice's endpoints, each declared once: an org's subscriptions to its own feed
(subscribe, list, read, delete, rotate a secret) and their deliveries (list, read one, retry
one)."""

from __future__ import annotations

from collections.abc import Callable

from reservations.kernel.errors import InvalidRequest, NotFound, Unauthorized
from reservations.kernel.http.openapi import PAGE_QUERY
from reservations.kernel.http.routes import ApiRoute, Link, page_route, read_route
from reservations.webhooks.errors import DeliveryNotFailed, SubscriptionDisabled
from reservations.webhooks.models.api import (
    NoBody,
    RetryQueued,
    SubscribeRequest,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
)
from reservations.webhooks.models.domain import DeliveryDetail, DeliveryPage
from reservations.webhooks.subscriptions import ROTATE_SECRET, UNSUBSCRIBE, subscribe_spec

WEBHOOKS = "/v1/webhooks"
WEBHOOK = WEBHOOKS + "/{subscriptionId}"
TAG = "webhooks"


def create_webhook(allow_local: Callable[[], bool]) -> ApiRoute:
    """``POST /v1/webhooks``; ``allow_local``: the stack's local receiver allowance
    (``http://127.0.0.1:<port>``), read at each call."""
    return ApiRoute(
        "create_webhook",
        "POST",
        WEBHOOKS,
        "Subscribe an endpoint to the caller's org's feed (at most 10 per org)",
        "createWebhook",
        "the subscription and its signing secret (shown this once); Location names it",
        SubscriptionWithSecret,
        status=201,
        spec=subscribe_spec(allow_local),
        body=SubscribeRequest,
        links=(
            Link("getWebhook", WEBHOOK),
            Link("rotateWebhookSecret", WEBHOOK + "/rotate-secret"),
            Link("listWebhookDeliveries", WEBHOOK + "/deliveries"),
            Link("deleteWebhook", WEBHOOK),
        ),
        tag=TAG,
    )


# As the document shows it (no local receiver allowed).
CREATE_WEBHOOK = create_webhook(lambda: False)
LIST_WEBHOOKS = page_route(
    "list_webhooks",
    WEBHOOKS,
    "List the caller's org's webhook subscriptions",
    "listWebhooks",
    "a page of subscriptions, sorted by id (no secrets)",
    SubscriptionPage,
    TAG,
    PAGE_QUERY,
)
GET_WEBHOOK = read_route(
    "get_webhook",
    WEBHOOK,
    "Get one of the caller's org's webhook subscriptions",
    "getWebhook",
    "the subscription, active or disabled (no secret)",
    SubscriptionView,
    TAG,
)
DELETE_WEBHOOK = ApiRoute(
    "delete_webhook",
    "DELETE",
    WEBHOOK,
    "Delete a webhook subscription: nothing more is sent to it",
    "deleteWebhook",
    "deleted (no body)",
    status=204,
    spec=UNSUBSCRIBE,
    tag=TAG,
)
ROTATE_WEBHOOK_SECRET = ApiRoute(
    "rotate_webhook_secret",
    "POST",
    WEBHOOK + "/rotate-secret",
    "Give a subscription a new signing secret; the old one signs too for 24 hours",
    "rotateWebhookSecret",
    "the subscription and its new secret (shown this once)",
    SubscriptionWithSecret,
    spec=ROTATE_SECRET,
    body=NoBody,
    body_required=False,
    tag=TAG,
)
LIST_DELIVERIES = page_route(
    "list_webhook_deliveries",
    WEBHOOK + "/deliveries",
    "A subscription's recent delivery attempts, newest first",
    "listWebhookDeliveries",
    "a page of attempts, newest first",
    DeliveryPage,
    TAG,
    PAGE_QUERY,
)
GET_DELIVERY = read_route(
    "get_webhook_delivery",
    WEBHOOK + "/deliveries/{eventId}",
    "One event's delivery to a subscription: where it stands and every attempt, newest first",
    "getWebhookDelivery",
    "the delivery, its state, when its next attempt is due, and its attempts newest first",
    DeliveryDetail,
    TAG,
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
    declared_errors=(
        InvalidRequest,
        Unauthorized,
        NotFound,
        SubscriptionDisabled,
        DeliveryNotFailed,
    ),
    takes_key=True,
    description=(
        "A retry is one attempt however often it is asked: a repeat, with or without the "
        "same Idempotency-Key, queues the same attempt, which is made once; the header is "
        "checked, and nothing needs keeping. A delivery that is not failed is a 409 "
        "delivery_not_failed naming its state (a pending one is retried on its schedule); "
        "one of a disabled subscription is a 409 subscription_disabled (re-enable it by "
        "deleting it and subscribing again). Neither carries Retry-After: asking again "
        "never succeeds. Nothing is queued for either."
    ),
    tag=TAG,
)

ENDPOINTS = (
    CREATE_WEBHOOK,
    LIST_WEBHOOKS,
    GET_WEBHOOK,
    DELETE_WEBHOOK,
    ROTATE_WEBHOOK_SECRET,
    LIST_DELIVERIES,
    GET_DELIVERY,
    RETRY_DELIVERY,
)

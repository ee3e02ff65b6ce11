"""The webhooks slice's endpoints, each declared once: an org's subscriptions to its own feed
(subscribe, list, read, delete, rotate a secret) and their deliveries (list, read one, retry
one)."""

from __future__ import annotations

from functools import partial

from reservations.kernel.errors import InvalidRequest, NotFound, Unauthorized
from reservations.kernel.grants import Grant
from reservations.kernel.http.openapi import PAGE_QUERY
from reservations.kernel.http.routes import ApiRoute, Call, Link, page_route, read_route
from reservations.kernel.idempotency.models import Outcome
from reservations.webhooks.deliveries import get_delivery, list_deliveries, retry_delivery
from reservations.webhooks.errors import DeliveryNotFailed, SubscriptionDisabled
from reservations.webhooks.models.api import (
    NoBody,
    RetryQueued,
    SubscribeRequest,
    SubscriptionPage,
    SubscriptionView,
    SubscriptionWithSecret,
)
from reservations.webhooks.models.domain import DeliveryDetail, DeliveryPage, new_subscription_id
from reservations.webhooks.ports import WebhookPorts
from reservations.webhooks.settings import settings
from reservations.webhooks.subscriptions import (
    ROTATE_SECRET,
    UNSUBSCRIBE,
    get_subscription,
    list_subscriptions,
    subscribe_spec,
)
from reservations.webhooks.wiring import webhook_ports

WEBHOOKS = "/v1/webhooks"
WEBHOOK = WEBHOOKS + "/{subscriptionId}"
TAG = "webhooks"
HOOKS, DELIVERIES = "ORGHOOK#*", "WHDELIV#*"  # an org's subscriptions; their deliveries
READ_SUBSCRIPTIONS = Grant(
    sid="ReadTheOrgsSubscriptions",
    actions=("dynamodb:Query",),
    keys=(HOOKS,),
    why="An org's subscriptions and their counter (ORGHOOK#<org>), each write one transaction "
    "conditioned on the counter or the subscription as read (at most 10 per org).",
)
READ_SUBSCRIPTION = Grant(
    sid="ReadTheOrgsSubscription", actions=("dynamodb:GetItem",), keys=(HOOKS,)
)


def _subscriptions(call: Call[WebhookPorts]) -> SubscriptionPage:
    query, ports = call.query, call.ports
    return list_subscriptions(call.caller, query["limit"], query["cursor"], ports.webhooks,
                              ports.signing_key())  # fmt: skip


def _subscription(call: Call[WebhookPorts]) -> SubscriptionView:
    return get_subscription(call.caller, call.ids["subscriptionId"], call.ports.webhooks)


def _deliveries(call: Call[WebhookPorts]) -> DeliveryPage:
    query, ports = call.query, call.ports
    return list_deliveries(call.caller, call.ids["subscriptionId"], query["limit"],
                           query["cursor"], ports.webhooks, ports.signing_key())  # fmt: skip


def _delivery(call: Call[WebhookPorts]) -> DeliveryDetail:
    ids = call.ids
    return get_delivery(call.caller, ids["subscriptionId"], ids["eventId"], call.ports.webhooks)


def _retry(call: Call[WebhookPorts]) -> Outcome:
    ids, ports = call.ids, call.ports
    return retry_delivery(call.caller, ids["subscriptionId"], ids["eventId"], call.key,
                          ports.webhooks, ports.queue_delivery, ports.clock())  # fmt: skip


def _allow_local() -> bool:
    """The stack's local receiver allowance (``http://127.0.0.1:<port>``), read at each
    call (the document is the same either way)."""
    return settings().webhook_allow_local_receiver


CREATE_WEBHOOK = ApiRoute(
    function="create_webhook",
    method="POST",
    path=WEBHOOKS,
    summary="Subscribe an endpoint to the caller's org's feed (at most 10 per org)",
    operation_id="createWebhook",
    success="the subscription and its signing secret (shown this once); Location names it",
    response=SubscriptionWithSecret,
    status=201,
    use=subscribe_spec(_allow_local),
    ports=partial(webhook_ports, new_id=new_subscription_id),
    grants=(
        READ_SUBSCRIPTIONS,
        Grant(
            sid="SubscribeTransactionOnTheOrgsSubscriptions",
            actions=("dynamodb:PutItem",),
            keys=(HOOKS,),
        ),
    ),
    variables=("WEBHOOK_ALLOW_LOCAL_RECEIVER",),
    body=SubscribeRequest,
    links=(
        Link("getWebhook", WEBHOOK),
        Link("rotateWebhookSecret", WEBHOOK + "/rotate-secret"),
        Link("listWebhookDeliveries", WEBHOOK + "/deliveries"),
        Link("deleteWebhook", WEBHOOK),
    ),
    tag=TAG,
)
LIST_WEBHOOKS = page_route(
    function="list_webhooks",
    path=WEBHOOKS,
    summary="List the caller's org's webhook subscriptions",
    operation_id="listWebhooks",
    success="a page of subscriptions, sorted by id (no secrets)",
    response=SubscriptionPage,
    use=_subscriptions,
    ports=webhook_ports,
    grants=(READ_SUBSCRIPTIONS,),
    tag=TAG,
    query=PAGE_QUERY,
)
GET_WEBHOOK = read_route(
    function="get_webhook",
    path=WEBHOOK,
    summary="Get one of the caller's org's webhook subscriptions",
    operation_id="getWebhook",
    success="the subscription, active or disabled (no secret)",
    response=SubscriptionView,
    use=_subscription,
    ports=webhook_ports,
    grants=(READ_SUBSCRIPTION,),
    tag=TAG,
)
DELETE_WEBHOOK = ApiRoute(
    function="delete_webhook",
    method="DELETE",
    path=WEBHOOK,
    summary="Delete a webhook subscription: nothing more is sent to it",
    operation_id="deleteWebhook",
    success="deleted (no body)",
    status=204,
    use=UNSUBSCRIBE,
    ports=webhook_ports,
    grants=(
        READ_SUBSCRIPTIONS,
        Grant(
            sid="DeleteTransactionOnTheOrgsSubscriptions",
            actions=("dynamodb:DeleteItem", "dynamodb:PutItem"),
            keys=(HOOKS,),
        ),
    ),
    tag=TAG,
)
ROTATE_WEBHOOK_SECRET = ApiRoute(
    function="rotate_webhook_secret",
    method="POST",
    path=WEBHOOK + "/rotate-secret",
    summary="Give a subscription a new signing secret; the old one signs too for 24 hours",
    operation_id="rotateWebhookSecret",
    success="the subscription and its new secret (shown this once)",
    response=SubscriptionWithSecret,
    use=ROTATE_SECRET,
    ports=webhook_ports,
    grants=(
        READ_SUBSCRIPTIONS,
        Grant(
            sid="RotateTransactionOnTheSubscription",
            actions=("dynamodb:UpdateItem",),
            keys=(HOOKS,),
        ),
    ),
    body=NoBody,
    body_required=False,
    tag=TAG,
)
LIST_DELIVERIES = page_route(
    function="list_webhook_deliveries",
    path=WEBHOOK + "/deliveries",
    summary="A subscription's recent delivery attempts, newest first",
    operation_id="listWebhookDeliveries",
    success="a page of attempts, newest first",
    response=DeliveryPage,
    use=_deliveries,
    ports=webhook_ports,
    grants=(
        READ_SUBSCRIPTION,
        Grant(sid="ReadTheSubscriptionsAttempts", actions=("dynamodb:Query",), keys=(DELIVERIES,)),
    ),
    tag=TAG,
    query=PAGE_QUERY,
)
GET_DELIVERY = read_route(
    function="get_webhook_delivery",
    path=WEBHOOK + "/deliveries/{eventId}",
    summary="One event's delivery to a subscription: where it stands and every attempt, "
    "newest first",
    operation_id="getWebhookDelivery",
    success="the delivery, its state, when its next attempt is due, and its attempts newest first",
    response=DeliveryDetail,
    use=_delivery,
    ports=webhook_ports,
    grants=(
        READ_SUBSCRIPTION,
        Grant(
            sid="ReadTheDeliveryAndItsAttempts",
            actions=("dynamodb:Query",),
            keys=(DELIVERIES,),
            why="One Query of the delivery's item and its attempts' copies. No write.",
        ),
    ),
    tag=TAG,
)
RETRY_DELIVERY = ApiRoute(
    function="retry_webhook_delivery",
    method="POST",
    path=WEBHOOK + "/deliveries/{eventId}/retry",
    summary="Send a failed delivery again now (one more attempt)",
    operation_id="retryWebhookDelivery",
    success="the attempt is queued: it is made within seconds",
    response=RetryQueued,
    status=202,
    use=_retry,
    ports=webhook_ports,
    grants=(
        READ_SUBSCRIPTION,
        Grant(sid="ReadTheDelivery", actions=("dynamodb:GetItem",), keys=(DELIVERIES,)),
        Grant(
            sid="QueueTheRetry",
            actions=("sqs:SendMessage",),
            on="delivery-queue",
            why="A retry by hand queues one message naming the attempts the delivery failed "
            "after: the sender makes one more attempt while it still stands so (no write here).",
        ),
    ),
    variables=("WEBHOOK_DELIVERY_QUEUE_URL",),
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

"""The webhooks slice's refusals: subscriptions and their deliveries.

Each class is one row of the contract's error table (``kernel.errors``), registered at
its row when it is defined."""

from __future__ import annotations

from reservations.kernel.errors import ApiError


class SubscriptionLimit(ApiError, row=100, status=409, code="subscription_limit"):
    """subscribe: the org already has 10 webhook subscriptions"""


class DeliveryNotFailed(ApiError, row=130, status=409, code="delivery_not_failed"):
    """webhook delivery retry: the delivery is not failed (pending: it is retried on its
    schedule; delivered: there is nothing to send again); the message names its state. Not
    kept under an Idempotency-Key: a retry keeps nothing, and a pending delivery may fail
    later and then be retried"""


class SubscriptionDisabled(ApiError, row=140, status=409, code="subscription_disabled"):
    """webhook delivery retry: the subscription is disabled (5 days of failed deliveries);
    nothing is queued. It is re-enabled by deleting it and subscribing again. Not kept under
    an Idempotency-Key"""

"""The webhooks slice's real ports: an org's subscriptions and deliveries, the delivery
queue and the clock (clients are made on first use)."""

from __future__ import annotations

from typing import Any

from reservations.kernel.clock import utc_now
from reservations.webhooks.ports import WebhookPorts
from reservations.webhooks.table.deliveries import DeliveryQueue
from reservations.webhooks.table.subscriptions import SubscriptionTable


def webhook_ports(**overrides: Any) -> WebhookPorts:
    """``overrides``: a function's own (a subscription's ids)."""
    real: dict[str, Any] = {
        "webhooks": SubscriptionTable(),
        "queue_delivery": DeliveryQueue().send,
        "clock": utc_now,
    }
    return WebhookPorts(**(real | overrides))

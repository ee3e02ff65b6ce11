"""Which webhook deliveries an event makes: one per active subscription, of an org that may
see the event, whose types take it; its body the event as that org sees it (``actor.keyId``
for the operator and the node's owner only), the exact text every attempt sends and signs.

The orgs are the ones whose feeds the event goes to (``feed_org_ids``: the owner when it
was written and its audience) and the platform operator's, which sees every event.

A subscription gets the events recorded from its creation on: a relay that hands an older
event over again (at least once) sends it to the subscriptions it was sent to, no newer one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from reservations.events import feed_org_ids
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.event_log import recorded_at
from reservations.webhooks.models.domain import (
    Delivery,
    DeliveryRequest,
    Subscription,
    SubscriptionStatus,
)


def orgs_to_notify(stored: StoredEvent, platform_org_id: str | None) -> frozenset[str]:
    """Every org that may see the event in its own feed, the operator's included."""
    orgs = feed_org_ids(stored)
    return orgs if platform_org_id is None else orgs | {platform_org_id}


def body_for(stored: StoredEvent, org_id: str, platform_org_id: str | None) -> str:
    """The event as ``org_id`` sees it, compact: what is sent, signed and kept (an org's
    reduced view, where it has one; the operator's and the owner's, the whole event)."""
    shows_key_id = org_id in (platform_org_id, stored.owner_org_id)
    event = stored.event if org_id == platform_org_id else stored.seen_by(org_id)
    return json.dumps(event.envelope(shows_key_id), separators=(",", ":"))


def deliveries_for(
    stored: StoredEvent,
    subscriptions: Mapping[str, Sequence[Subscription]],
    platform_org_id: str | None,
) -> list[DeliveryRequest]:
    """One request per (active subscription that takes the event's type and existed when
    it was recorded, event), for the orgs that may see it; ``subscriptions``: each org's,
    as read."""
    requests = []
    event_type = stored.event.type
    recorded = None if stored.position is None else recorded_at(stored.position)
    for org_id in sorted(orgs_to_notify(stored, platform_org_id)):
        for subscription in subscriptions.get(org_id, ()):
            if subscription.status is not SubscriptionStatus.ACTIVE:
                continue
            if not subscription.wants(event_type):
                continue
            if recorded is not None and subscription.created_at > recorded:
                continue
            requests.append(
                DeliveryRequest(
                    subscription_id=subscription.id,
                    org_id=org_id,
                    event_id=stored.id,
                    event_type=event_type,
                    body=body_for(stored, org_id, platform_org_id),
                )
            )
    return requests


@dataclass(frozen=True, slots=True)
class PendingDelivery:
    """A delivery an event makes, finished: its message, and its record, pending with no
    attempt, kept until ``expires_at``."""

    request: DeliveryRequest
    record: Delivery
    expires_at: datetime


def pending_deliveries(
    stored: StoredEvent,
    subscriptions: Mapping[str, Sequence[Subscription]],
    platform_org_id: str | None,
    now: datetime,
    retention_days: int,
) -> list[PendingDelivery]:
    """The event's deliveries (:func:`deliveries_for`), each kept ``retention_days`` from
    ``now``, when it is queued."""
    expires_at = now + timedelta(days=retention_days)
    return [
        PendingDelivery(
            request,
            Delivery(request.subscription_id, request.event_id, request.event_type, request.body),
            expires_at,
        )
        for request in deliveries_for(stored, subscriptions, platform_org_id)
    ]

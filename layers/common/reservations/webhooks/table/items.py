"""How webhooks are keyed and encoded in the table (kept apart from ``items``, the node
partitions' layout, as a layout of its own).

- ``ORGHOOK#<org>`` / ``WH#<subscription>``: a subscription; an org's are one Query.
- ``ORGHOOK#<org>`` / ``COUNT``: how many subscriptions the org has (``count``), what every
  subscribe and delete is conditioned on (the limit of 10 holds under concurrency).
- ``WHDELIV#<subscription>`` / ``EVT#<event>``: one event's delivery to it, where it stands.
- ``WHDELIV#<subscription>`` / ``ATT#<at>#<event>#<attempt>``: one attempt, so the listing
  is one Query of ``ATT#`` backwards (newest first).
- ``WHDELIV#<subscription>`` / ``EVT#<event>#ATT#<attempt>``: the same attempt again, beside
  its delivery, so one delivery and all its attempts are one Query of ``EVT#<event>`` to
  ``EVT#<event>#~`` (an id's characters all sort after ``#``, so no other event's items fall
  in that range).

Delivery items and attempts expire (TTL) ``HistoryRetentionDays`` after their last write.
Times are kept to the millisecond (``at`` sorts the attempts; a 5 s retry is kept as such).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from reservations.kernel.times import parse_time
from reservations.webhooks.models.domain import (
    AttemptResult,
    Delivery,
    DeliveryAttempt,
    DeliveryState,
    SigningSecrets,
    Subscription,
    SubscriptionStatus,
)

SUBSCRIPTION_PREFIX = "ORGHOOK#"
SUBSCRIPTION_SK_PREFIX = "WH#"
COUNTER_SK = "COUNT"
DELIVERY_PREFIX = "WHDELIV#"
DELIVERY_SK_PREFIX = "EVT#"
ATTEMPT_SK_PREFIX = "ATT#"
EXPIRES = "expiresAtEpoch"

Item = dict[str, Any]


def stamp(moment: datetime) -> str:
    """RFC 3339 in UTC to the millisecond, with a ``Z`` (text order is time order)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _stamp_or_none(moment: datetime | None) -> str | None:
    return None if moment is None else stamp(moment)


def _time_or_none(text: Any) -> datetime | None:
    return None if text is None else parse_time(str(text))


def subscription_key(org_id: str, subscription_id: str) -> Item:
    return {"PK": SUBSCRIPTION_PREFIX + org_id, "SK": SUBSCRIPTION_SK_PREFIX + subscription_id}


def subscription_pk(org_id: str) -> str:
    return SUBSCRIPTION_PREFIX + org_id


def counter_key(org_id: str) -> Item:
    return {"PK": subscription_pk(org_id), "SK": COUNTER_SK}


def delivery_pk(subscription_id: str) -> str:
    return DELIVERY_PREFIX + subscription_id


def delivery_key(subscription_id: str, event_id: str) -> Item:
    return {"PK": delivery_pk(subscription_id), "SK": DELIVERY_SK_PREFIX + event_id}


def delivery_range(subscription_id: str, event_id: str) -> tuple[str, str, str]:
    """The partition and the sort-key bounds of one delivery and its attempts' copies."""
    first = DELIVERY_SK_PREFIX + event_id
    return delivery_pk(subscription_id), first, first + "#~"


def attempt_sk(attempt: DeliveryAttempt) -> str:
    return f"{ATTEMPT_SK_PREFIX}{stamp(attempt.at)}#{attempt.event_id}#{attempt.attempt:02d}"


def expires_epoch(at: datetime, retention_days: int) -> int:
    return int((at + timedelta(days=retention_days)).timestamp())


def subscription_item(subscription: Subscription) -> Item:
    secrets = subscription.secrets
    return {
        **subscription_key(subscription.org_id, subscription.id),
        "id": subscription.id,
        "orgId": subscription.org_id,
        "url": subscription.url,
        "types": sorted(subscription.types) if subscription.types is not None else None,
        "description": subscription.description,
        "status": subscription.status.value,
        "secret": secrets.current,
        "previousSecret": secrets.previous,
        "previousSecretExpiresAt": _stamp_or_none(secrets.previous_expires_at),
        "createdAt": stamp(subscription.created_at),
        "failingSince": _stamp_or_none(subscription.failing_since),
        "disabledAt": _stamp_or_none(subscription.disabled_at),
    }


def subscription_from_item(item: Item) -> Subscription:
    types = item.get("types")
    return Subscription(
        id=item["id"],
        org_id=item["orgId"],
        url=item["url"],
        secrets=SigningSecrets(
            current=item["secret"],
            previous=item.get("previousSecret"),
            previous_expires_at=_time_or_none(item.get("previousSecretExpiresAt")),
        ),
        created_at=parse_time(item["createdAt"]),
        types=None if types is None else frozenset(str(t) for t in types),
        description=item.get("description"),
        status=SubscriptionStatus(item.get("status", SubscriptionStatus.ACTIVE.value)),
        failing_since=_time_or_none(item.get("failingSince")),
        disabled_at=_time_or_none(item.get("disabledAt")),
    )


def delivery_item(delivery: Delivery, retention_days: int) -> Item:
    last = delivery.last_attempt_at
    return {
        **delivery_key(delivery.subscription_id, delivery.event_id),
        "eventId": delivery.event_id,
        "type": delivery.event_type,
        "body": delivery.body,
        "state": delivery.state.value,
        "attempts": delivery.attempts,
        "lastAttemptAt": _stamp_or_none(last),
        "nextAttemptAt": _stamp_or_none(delivery.next_attempt_at),
        EXPIRES: None if last is None else expires_epoch(last, retention_days),
    }


def delivery_from_item(subscription_id: str, item: Item) -> Delivery:
    return Delivery(
        subscription_id=subscription_id,
        event_id=item["eventId"],
        event_type=item["type"],
        body=item["body"],
        state=DeliveryState(item["state"]),
        attempts=int(item["attempts"]),
        last_attempt_at=_time_or_none(item.get("lastAttemptAt")),
        next_attempt_at=_time_or_none(item.get("nextAttemptAt")),
    )


def attempt_item(attempt: DeliveryAttempt, retention_days: int) -> Item:
    return {
        "PK": delivery_pk(attempt.subscription_id),
        "SK": attempt_sk(attempt),
        "eventId": attempt.event_id,
        "type": attempt.event_type,
        "attempt": attempt.attempt,
        "at": stamp(attempt.at),
        "status": attempt.result.status,
        "error": attempt.result.error,
        "state": attempt.state.value,
        "nextAttemptAt": _stamp_or_none(attempt.next_attempt_at),
        EXPIRES: expires_epoch(attempt.at, retention_days),
    }


def attempt_copy_item(attempt: DeliveryAttempt, retention_days: int) -> Item:
    """The attempt beside its delivery (``EVT#<event>#ATT#<attempt>``), read by the view of
    one delivery."""
    sk = f"{DELIVERY_SK_PREFIX}{attempt.event_id}#{ATTEMPT_SK_PREFIX}{attempt.attempt:02d}"
    return {**attempt_item(attempt, retention_days), "SK": sk}


def is_attempt_copy(item: Item) -> bool:
    return "#" + ATTEMPT_SK_PREFIX in str(item["SK"]).removeprefix(DELIVERY_SK_PREFIX)


def attempt_from_item(subscription_id: str, item: Item) -> DeliveryAttempt:
    status = item.get("status")
    return DeliveryAttempt(
        subscription_id=subscription_id,
        event_id=item["eventId"],
        event_type=item["type"],
        attempt=int(item["attempt"]),
        at=parse_time(item["at"]),
        result=AttemptResult(
            status=None if status is None else int(status), error=item.get("error")
        ),
        state=DeliveryState(item["state"]),
        next_attempt_at=_time_or_none(item.get("nextAttemptAt")),
    )

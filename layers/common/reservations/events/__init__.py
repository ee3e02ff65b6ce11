"""The events slice: the feeds, the relay and its outlets, who may see which event.

What other slices may use of it: they import it from here, never from its modules."""

from __future__ import annotations

from reservations.events.models import EVENT_TYPE_SCHEMA, EVENT_TYPES, EventTypeText
from reservations.events.rules.visibility import EVENTS_READ, feed_org_ids

__all__ = ["EVENTS_READ", "EVENT_TYPES", "EVENT_TYPE_SCHEMA", "EventTypeText", "feed_org_ids"]

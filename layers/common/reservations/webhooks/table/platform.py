"""The one item naming the platform's org (the operator's key command writes it beside the
keys; the fan-out reads it)."""

from __future__ import annotations

from reservations.kernel.aws.codec import Item

# What the operator's key command keeps beside the keys: a marker per key id (so an id is
# unique across the table, naming its key's hash) and the one item naming the platform's org.
PLATFORM = "PLATFORM"


def platform_key() -> Item:
    return {"PK": PLATFORM, "SK": PLATFORM}

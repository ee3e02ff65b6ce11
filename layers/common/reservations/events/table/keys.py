"""Where the org feeds sit in the table: an org's feed (written by the relay), the operator's
feed of every event (``ORGEVT#/platform``: "/" is in no org id), their shards and an event's
key in a feed. A node's own feed is the node's (``nodes``: its changes write it)."""

from __future__ import annotations

from reservations.kernel.aws.codec import Item
from reservations.kernel.shards import shard_of

ORG_EVENTS_PREFIX = "ORGEVT#"
PLATFORM_FEED = ORG_EVENTS_PREFIX + "/platform"


def org_events_pk(org_id: str) -> str:
    return ORG_EVENTS_PREFIX + org_id


def feed_shard(node_id: str, shards: int) -> int:
    """The shard of a feed of ``shards`` that a node's events go to: stable across processes
    and deploys (``kernel.shards``)."""
    return shard_of(node_id, shards)


def feed_shard_pk(feed_pk: str, shard: int) -> str:
    """Shard ``shard`` of the feed whose own partition is ``feed_pk`` (shard 0 is that
    partition itself)."""
    return feed_pk if shard == 0 else f"{feed_pk}#{shard}"


def event_key(partition_key: str, position: str) -> Item:
    """An event in a feed, at its position (time to the ms, then its id)."""
    return {"PK": partition_key, "SK": position}

"""The single table's keys: the one place a partition or sort key string is spelled.

One partition per node (``NODE#<id>``) holds the node, its units, its reservations and its
live workloads, so either endpoint reads all it decides from with one Query. After them, last
in the partition, the node's list access item (``~ACCESS``), which a page of the reservation
list reads with the page whatever its cursor, and which the calls on the node's present stop
before. Everything a write leaves beside the node lives in partitions of its own, so the hot
one stays as small as the node: API keys (``APIKEY#<sha256>``), Idempotency-Key records
(``IDEMPOTENCY#<scope>``), events (``NODEEVT#<node>``, the node's feed, which every write
puts its events in; ``ORGEVT#<org>``, the org feeds the relay fans them out to), finished
workloads (``WLHIST#<node>``, by workload id, then time) and ended reservations
(``NODEHIST#<node>``, by id), each until their retention ends. Workloads with an open
termination are also in the sparse ``OpenTerminations`` index, keyed by their
``openTermination`` attribute.
"""

from __future__ import annotations

from reservations.kernel.aws.codec import Item
from reservations.kernel.shards import shard_of

NODE_PREFIX = "NODE#"
NODE_SK = "#NODE"
UNIT_PREFIX = "UNIT#"
RESERVATION_PREFIX = "RES#"
WORKLOAD_PREFIX = "WL#"
# Sorts after every other sort key of a node partition ("~" is above every prefix's letter).
ACCESS_SK = "~ACCESS"
# The feeds: a node's (written by its changes) and an org's (by the relay); the operator's
# feed of every event is ``ORGEVT#/platform`` ("/" is in no org id). An org feed (the
# operator's too) may be split into shards, one partition each: shard 0 is the feed's own
# partition, shard k > 0 is ``<feed>#<k>`` ("#" is in no org id); an event goes to the shard
# its node hashes to (``events.table.keys.feed_shard``), so a feed of one shard is the feed
# as it was. The org feeds' keys are the events slice's.
NODE_EVENTS_PREFIX = "NODEEVT#"
# Closed terminations and ended workloads, kept outside the node partition for a while.
HISTORY_PREFIX = "WLHIST#"
# The attribute that is the partition key of the sparse index of open terminations
# (``terminations.table.store``): "open", or "stuck" once delivered several times without a
# report; absent otherwise.
OPEN_TERMINATION = "openTermination"
# A node's ended reservations (cancelled, expired), by id as in the node's partition, until
# their retention ends (TTL).
NODE_HISTORY_PREFIX = "NODEHIST#"
# The index a reservation list with ended statuses pages: every reservation of a node,
# live or in history, and the node's list access item, under the node's partition key
# (``listPK``), in sort-key order (a reservation keeps its sort key when it moves, so a
# cursor's place holds across the move).
NODE_RESERVATIONS_INDEX = "NodeReservations"
LIST_PK = "listPK"
# The sparse index the history mover reads: the node partition's reservations with an
# ``endsAt`` (``liveEnds`` is on them alone; history items do not carry it), by ``endsAt``.
LIVE_ENDS_INDEX = "LiveReservationEnds"
LIVE_ENDS = "liveEnds"
LIVE = "live"
# The clock's sparse index (``lifecycle.rules.clock``): the node partitions' reservations with
# a moment armed, in ``CLOCK_SHARDS`` partitions (``clockShard``, by the reservation's id),
# by their next moment (``clockAt``: the moment, then its kind). History items never carry
# them. ``docs/scale.md`` says why sharded.
CLOCK_INDEX = "ClockMoments"
CLOCK_SHARD = "clockShard"
CLOCK_AT = "clockAt"
# The lending index (``capacity.lending``), sparse and sharded as the clock's: the node
# partitions' reservations a lending pass may have something to do for, by ``lendAt`` (to
# the millisecond, fixed width). History items never carry them.
LENDING_INDEX = "LendingMoments"
LEND_SHARD = "lendShard"
LEND_AT = "lendAt"
LEND_SHARDS = 16


def lend_shard(reservation_id: str) -> str:
    """The lending index partition of a reservation: a stable hash of its id."""
    return f"lend#{shard_of(reservation_id, LEND_SHARDS):02d}"


def lend_shards() -> tuple[str, ...]:
    return tuple(f"lend#{n:02d}" for n in range(LEND_SHARDS))


def node_pk(node_id: str) -> str:
    return NODE_PREFIX + node_id


def node_id_of(partition_key: str) -> str:
    """The node id a node partition's key names."""
    return partition_key.removeprefix(NODE_PREFIX)


def node_key(node_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": NODE_SK}


def unit_key(node_id: str, unit_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": UNIT_PREFIX + unit_id}


def reservation_key(node_id: str, reservation_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": RESERVATION_PREFIX + reservation_id}


def node_history_pk(node_id: str) -> str:
    return NODE_HISTORY_PREFIX + node_id


def reservation_history_key(node_id: str, reservation_id: str) -> Item:
    """An ended reservation, out of the node's partition, under the same sort key."""
    return {"PK": node_history_pk(node_id), "SK": RESERVATION_PREFIX + reservation_id}


def workload_key(node_id: str, workload_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": WORKLOAD_PREFIX + workload_id}


def access_key(node_id: str) -> Item:
    return {"PK": node_pk(node_id), "SK": ACCESS_SK}


def node_events_pk(node_id: str) -> str:
    """A node's feed: its events in time order (never in the node partition)."""
    return NODE_EVENTS_PREFIX + node_id


def workload_history_pk(node_id: str) -> str:
    return HISTORY_PREFIX + node_id


def workload_history_prefix(workload_id: str) -> str:
    """What every history sort key of one workload id starts with (no workload id holds a
    ``#``: no other id's keys start so)."""
    return f"{WORKLOAD_PREFIX}{workload_id}#"


def history_key(node_id: str, workload_id: str, stamp: str, ended_by: str) -> Item:
    """A workload that left the node: which, when (to the millisecond, fixed width), and
    the termination (or write) that ended it, so two lives of one workload id never share a
    key, and its latest life is the last key under its id (one Query backwards, Limit 1,
    whatever the node's history)."""
    sort_key = f"{workload_history_prefix(workload_id)}{stamp}#{ended_by}"
    return {"PK": workload_history_pk(node_id), "SK": sort_key}

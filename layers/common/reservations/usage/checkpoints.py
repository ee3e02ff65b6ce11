"""The relay's usage outlet: for each node an event is relayed of, the checkpoint of the
last hour that began at least ``SETTLED`` ago (the fold carried to that hour's start,
``rules/ledger.py``), made from the node's latest one and the events since.

A checkpoint at an hour must hold every change before it. Every write commits its events
within ``SETTLED`` of their ``time`` (one transaction and its retries; the functions that
write time out sooner), so one made later holds them all. The events recorded later than
their time (the clock's moments, and the reviews a node update derives, recorded when the
relay derives them) are ones the fold does not read: it finds their moments itself. So a
checkpoint, once made, is never stale, and two relays making the same one write the same
item.

What it adds to a relayed event: a Query of one item for its node (none again in the same
container within the hour), and once a node-hour with changes, the events since its last
checkpoint (one Query of the EventsByTime index, one of its loads) and one PutItem. An
outlet that fails hands the node's events back to the relay, which takes them on again."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from botocore.exceptions import BotoCoreError, ClientError

from reservations.kernel.clock import utc_now
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.observability import logger
from reservations.kernel.settings import settings
from reservations.usage.ports import Checkpoints
from reservations.usage.rules.facts import to_ms
from reservations.usage.rules.ledger import carry
from reservations.usage.rules.rows import PERIOD_MS, Granularity

USAGE = "usage"
# How long after an hour begins its checkpoint may be made (above).
SETTLED = timedelta(minutes=2)
_HOUR = PERIOD_MS[Granularity.HOUR]


def checkpoint_hour(now: datetime) -> int:
    """The start (ms) of the last hour that began at least ``SETTLED`` before ``now``."""
    return to_ms(now - SETTLED) // _HOUR * _HOUR


class UsageCheckpoints:
    """Keeps each relayed event's node's checkpoint; the table is given (``wiring.py``)."""

    name = USAGE

    def __init__(self, table: Checkpoints, clock: Callable[[], datetime] = utc_now) -> None:
        self._table = table
        self._clock = clock
        # The hour each node's checkpoint was last seen kept at, by this container.
        self._kept: dict[str, int] = {}

    def deliver(self, events: Sequence[StoredEvent]) -> set[str]:
        """Each node's checkpoint kept; the ids of the events of the nodes it failed for."""
        hour = checkpoint_hour(self._clock())
        by_node: dict[str, set[str]] = {}
        for stored in events:
            by_node.setdefault(stored.event.node_id, set()).add(stored.id)
        failed: set[str] = set()
        for node_id, ids in sorted(by_node.items()):
            try:
                self.keep(node_id, hour)
            except (BotoCoreError, ClientError) as error:
                detail = {"nodeId": node_id, "error": str(error)}
                logger.warning("usage checkpoint not kept", extra=detail)
                failed |= ids
        return failed

    def keep(self, node_id: str, hour: int) -> None:
        """The node's checkpoint at ``hour``, made from its latest one before, unless kept."""
        if self._kept.get(node_id) == hour:
            return
        latest = self._table.checkpoint(node_id, hour)
        if latest is None or latest.at != hour:
            since = latest.at if latest is not None else None
            events = self._table.node_history(node_id, since, hour)
            carried = carry(node_id, events, hour, since=latest)
            self._table.put_checkpoint(carried, settings().history_retention_days)
        self._kept[node_id] = hour

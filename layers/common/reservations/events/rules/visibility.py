"""Who may see which event, and with which details (pure).

| type | who may see it |
|---|---|
| ``reservation.*`` | operator, node owner, the reservation's managers and audience |
| ``reservation.updated`` | the same, plus the orgs the change no longer names (reduced) |
| ``workload.placed`` / ``.ended`` | operator, node owner, the workload's org |
| ``workload.termination_requested`` / ``.terminated`` | the same, and the reclaiming reservation's managers |
| ``workload.termination_stuck``, ``node.*`` | operator, node owner |

The builders (``<slice>/rules/events.py``) record on each event the orgs of the third column besides
the operator and the owner (its audience), as they were when the change committed, so a read
decides from the event alone. An org of the audience may see a reduced view of it instead
(``StoredEvent.views``: an org a PATCH no longer names sees only the lists it left); every
feed and webhook renders the event for its org with ``StoredEvent.seen_by``. ``actor.keyId`` is shown to the operator and the node's owner
only, never to the org that made the call.

Which owner: in the node's feed, the node's owner now (like every read of a node: a new
owner sees the node's past, the old one loses it); in an org's feed, the owner when the
event was written (the event was given to that org then).
"""  # noqa: E501

from __future__ import annotations

from datetime import datetime

from reservations.events.models import NodeFeedAccess
from reservations.kernel.caller import Caller
from reservations.kernel.envelope import StoredEvent
from reservations.nodes import READ, named_at

EVENTS_READ = "events.read"


def sees_whole_node(caller: Caller, access: NodeFeedAccess) -> bool:
    """The operator and the node's owner see every event of the node, key ids included."""
    return caller.platform_operator or caller.org_id == access.owner_org_id


def may_read_node_feed(caller: Caller, access: NodeFeedAccess, now: datetime) -> bool:
    """``reservation.read``, and an org that may see some event of the node: the operator,
    the owner, or one the node's reservations or workloads name (else the 404, even when
    the node has no event yet)."""
    if not caller.has(READ):
        return False
    return (
        sees_whole_node(caller, access)
        or caller.org_id in named_at(access.named_until, now)
        or caller.org_id in access.workload_org_ids
    )


def may_read_org_feed(caller: Caller) -> bool:
    """Any org's key with ``events.read`` reads its own org's feed."""
    return caller.has(EVENTS_READ)


def in_node_feed_of(stored: StoredEvent, caller: Caller, sees_whole: bool) -> bool:
    """Whether the caller sees this event of the node's feed."""
    return sees_whole or caller.org_id in stored.audience_org_ids


def shows_key_id(caller: Caller, owner_org_id: str) -> bool:
    """``actor.keyId`` for the operator and the node's owner only."""
    return caller.platform_operator or caller.org_id == owner_org_id


def feed_org_ids(stored: StoredEvent) -> frozenset[str]:
    """The orgs whose feeds the event goes to, besides the operator's (which gets every
    event): the node's owner when it was written, and its audience."""
    return frozenset({stored.owner_org_id, *stored.audience_org_ids})

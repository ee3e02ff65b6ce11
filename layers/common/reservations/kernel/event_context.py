"""The context every write's events are built in (``<slice>.rules.events``): where they
happened and whose it is as read, the write's own id, its time and who made it."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from reservations.kernel.envelope import Actor, EventContext


class _Written(Protocol):
    """A write made by a key: its caller's org and key id, and its time."""

    @property
    def caller_org_id(self) -> str: ...

    @property
    def caller_key_id(self) -> str: ...

    @property
    def at(self) -> datetime: ...


def by_caller(write: _Written, node_id: str, owner_org_id: str, change_id: str) -> EventContext:
    """The context of a write a key made (every API write)."""
    actor = Actor(write.caller_org_id, write.caller_key_id)
    return EventContext(node_id, owner_org_id, change_id, write.at, actor)

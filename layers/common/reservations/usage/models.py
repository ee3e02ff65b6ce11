"""Usage's states (the contract's eight, in its order) and usage as the API shows it: a row
per key and period, each state in integer milliseconds (camelCase on the wire)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar

from pydantic import ConfigDict, Field, RootModel

from reservations.kernel.wire import CURSOR_EXAMPLE, NextCursor, Timestamp, WireModel


class UsageState(StrEnum):
    """The contract's states, in its order (the order a row shows them in)."""

    REVIEW = "review"
    RECLAIMING = "reclaiming"
    LENT_USED = "lent_used"
    LENT_IDLE = "lent_idle"
    RESERVED_USED = "reserved_used"
    RESERVED_IDLE = "reserved_idle"
    OPEN_USED = "open_used"
    OPEN_IDLE = "open_idle"


STATES: tuple[UsageState, ...] = tuple(UsageState)
# The states of a unit no reservation governs; every other state is one a governed unit can
# be in (``reclaiming`` is either: it applies whatever governs the unit).
OPEN_STATES = frozenset({UsageState.OPEN_USED, UsageState.OPEN_IDLE})
GOVERNED_STATES: tuple[UsageState, ...] = tuple(s for s in STATES if s not in OPEN_STATES)


# A day of node-a1's four units, as the demo's first day could count it (integers sum to
# 4 units x 86,400,000 ms).
_NODE_STATES = {
    "review": 0,
    "reclaiming": 1_200_000,
    "lent_used": 84_000_000,
    "lent_idle": 1_200_000,
    "reserved_used": 86_400_000,
    "reserved_idle": 0,
    "open_used": 86_400_000,
    "open_idle": 86_400_000,
}
_ROW = {
    "id": "node-a1/day/2026-12-01T00:00:00Z",
    "nodeId": "node-a1",
    "start": "2026-12-01T00:00:00Z",
    "end": "2026-12-02T00:00:00Z",
    "unitMs": _NODE_STATES,
    "gpuMs": {**_NODE_STATES, "open_used": 172_800_000},
    "asOf": "2026-12-07T09:30:05.120Z",
    "final": True,
    "revision": 1,
}


# Each state's figure: a node's row has all eight, a reservation's the six a unit it governs
# can be in; a newer API may add states (the client keeps them).
_FIGURES: dict[str, Any] = {
    "description": "integer milliseconds by state: a node's row has all eight, a "
    f"reservation's only {', '.join(GOVERNED_STATES)}",
    "properties": {state.value: {"type": "integer", "minimum": 0} for state in STATES},
    "examples": [_NODE_STATES],
}


class UsageFigures(RootModel[dict[str, int]]):
    """A row's figure for each state (one schema for ``unitMs`` and ``gpuMs``)."""

    model_config = ConfigDict(frozen=True, json_schema_extra=_FIGURES)


class UsageRow(WireModel):
    """One key's usage over one whole UTC period, counted up to the earlier of ``end`` and
    ``asOf``: final once ``end`` is at or before ``asOf``. Billing takes the latest
    ``revision`` of each ``id``."""

    EXAMPLES: ClassVar[list[Any]] = [_ROW]

    id: str = Field(description="stable: the key, the granularity and the period's start")
    node_id: str
    reservation_id: str | None = Field(default=None, description="groupBy=reservation only")
    start: Timestamp
    end: Timestamp
    unit_ms: UsageFigures = Field(description="the units' milliseconds in each state")
    gpu_ms: UsageFigures = Field(
        description="unit-milliseconds times the unit's sellableGpus at that moment"
    )
    as_of: Timestamp = Field(description="every change before it is counted")
    final: bool
    revision: int = Field(
        ge=1,
        description="1, and one more each time a change that arrived after the row was "
        "final altered its figures",
    )


class UsagePage(WireModel):
    """One page of usage rows the caller may see, by key (node, then reservation), then
    ``start``."""

    EXAMPLES: ClassVar[list[Any]] = [{"items": [_ROW], "nextCursor": CURSOR_EXAMPLE}]

    items: list[UsageRow]
    next_cursor: NextCursor = None

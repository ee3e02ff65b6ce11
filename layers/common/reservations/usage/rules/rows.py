"""A node's ledger split into rows (pure): one per whole UTC period (``hour`` or ``day``),
by node or by reservation, each state in integer unit-milliseconds and GPU-milliseconds
(a unit's milliseconds times its ``sellableGpus`` then), counted up to the earlier of the
row's end and the watermark ``asOf``, ``final`` once its end is at or before ``asOf``.

A node's row holds all eight states and sums to its units' time exactly; a reservation's
holds only the states a unit it governs can be in (not ``open_*``). A node's row is the sum
of the rows of the reservations that governed its units, plus its ``open_*`` states and the
``reclaiming`` of units no reservation governed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from reservations.kernel.times import format_event_time, format_time
from reservations.usage.rules.facts import from_ms
from reservations.usage.rules.ledger import Interval, NodeLedger
from reservations.usage.rules.states import GOVERNED_STATES, STATES, UsageState


class Granularity(StrEnum):
    HOUR = "hour"
    DAY = "day"


# Whole UTC periods: Unix time has no leap seconds, so each is a multiple from the epoch.
PERIOD_MS = {Granularity.HOUR: 3_600_000, Granularity.DAY: 86_400_000}


@dataclass(frozen=True, slots=True, order=True)
class RowKey:
    """What a row is of: a node, or a reservation on it."""

    node_id: str
    reservation_id: str | None = None


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One row: its key and period ``[start, end)`` (ms), each state's unit-ms and GPU-ms
    counted up to ``min(end, as_of)``. ``revision``: 1, grown each time a change that
    arrived after the row was final altered its figures (``revisions.py``)."""

    key: RowKey
    granularity: Granularity
    start: int
    end: int
    unit_ms: Mapping[UsageState, int]
    gpu_ms: Mapping[UsageState, int]
    as_of: int
    revision: int = 1

    @property
    def final(self) -> bool:
        return self.end <= self.as_of

    @property
    def id(self) -> str:
        """Stable: the key and the period, whatever the watermark or the revision."""
        key = self.key.node_id
        if self.key.reservation_id is not None:
            key += f"/{self.key.reservation_id}"
        return f"{key}/{self.granularity.value}/{format_time(from_ms(self.start))}"


def periods(start: int, end: int, granularity: Granularity) -> list[tuple[int, int]]:
    """The whole periods from ``start`` to ``end`` (ms); ValueError unless both fall on
    the granularity's boundaries and ``start`` < ``end``."""
    size = PERIOD_MS[granularity]
    if start % size or end % size or start >= end:
        raise ValueError(f"from and to must be whole UTC {granularity.value}s, from before to")
    return [(at, at + size) for at in range(start, end, size)]


def node_rows(ledger: NodeLedger, granularity: Granularity, start: int, end: int) -> list[UsageRow]:
    """The node's rows over ``[start, end)``: each period that began before ``as_of`` and
    ends after the node's first moment (a period with nothing counted yet has no row)."""
    if ledger.first is None:
        return []
    spans = [
        (a, b) for a, b in periods(start, end, granularity) if a < ledger.as_of and b > ledger.first
    ]
    key = RowKey(ledger.node_id)
    sums = _sums(ledger.intervals, spans, ledger.as_of, lambda interval: key)
    return [_row(key, span, sums, STATES, ledger.as_of, granularity) for span in spans]


def reservation_rows(
    ledger: NodeLedger, granularity: Granularity, start: int, end: int
) -> list[UsageRow]:
    """The rows of each reservation that governed a unit of the node within ``[start,
    end)``, by reservation then period: a period in which it governed nothing (or nothing
    yet) has no row."""
    spans = [(a, b) for a, b in periods(start, end, granularity) if a < ledger.as_of]
    node_id = ledger.node_id
    governed = (i for i in ledger.intervals if i.reservation_id is not None)
    sums = _sums(governed, spans, ledger.as_of, lambda i: RowKey(node_id, i.reservation_id))
    return [
        _row(key, span, sums, GOVERNED_STATES, ledger.as_of, granularity)
        for key, span in sorted(sums)
    ]


_Sums = dict[tuple[RowKey, tuple[int, int]], tuple[dict[UsageState, int], dict[UsageState, int]]]


def _sums(
    intervals: Iterable[Interval],
    spans: list[tuple[int, int]],
    as_of: int,
    key_of: Callable[[Interval], RowKey],
) -> _Sums:
    """Each key's and period's unit-ms and GPU-ms by state: every interval's overlap with
    each period of ``spans`` (contiguous), cut at ``as_of``."""
    sums: _Sums = {}
    if not spans:
        return sums
    first, last, size = spans[0][0], spans[-1][1], spans[0][1] - spans[0][0]
    for interval in intervals:
        at, until = max(interval.start, first), min(interval.end, last, as_of)
        while at < until:
            span = spans[(at - first) // size]
            upto = min(until, span[1])
            units, gpus = sums.setdefault(
                (key_of(interval), span), (defaultdict(int), defaultdict(int))
            )
            units[interval.state] += upto - at
            gpus[interval.state] += (upto - at) * interval.gpus
            at = upto
    return sums


def _row(
    key: RowKey,
    span: tuple[int, int],
    sums: _Sums,
    states: tuple[UsageState, ...],
    as_of: int,
    granularity: Granularity,
) -> UsageRow:
    units, gpus = sums.get((key, span), ({}, {}))
    return UsageRow(
        key=key,
        granularity=granularity,
        start=span[0],
        end=span[1],
        unit_ms={state: units.get(state, 0) for state in states},
        gpu_ms={state: gpus.get(state, 0) for state in states},
        as_of=as_of,
    )


def answer(row: UsageRow) -> dict[str, Any]:
    """The row as ``GET /v1/usage`` shows it."""
    key: dict[str, Any] = {"nodeId": row.key.node_id}
    if row.key.reservation_id is not None:
        key["reservationId"] = row.key.reservation_id
    return {
        "id": row.id,
        **key,
        "start": format_time(from_ms(row.start)),
        "end": format_time(from_ms(row.end)),
        "unitMs": {state.value: ms for state, ms in row.unit_ms.items()},
        "gpuMs": {state.value: ms for state, ms in row.gpu_ms.items()},
        "asOf": format_event_time(from_ms(row.as_of)),
        "final": row.final,
        "revision": row.revision,
    }

"""A row's revision (pure): 1, and one more for each change that reached the row after it
was final and altered its figures.

A row is final once the watermark ``asOf`` (the present less the feeds' settle window W)
has passed its end: reads from its end + W on answer it final. A change reaches a read once
its write has committed, which the feed's items bound (``kernel.event_log``): an item's
position is taken before its write commits, and a write that answered W or more after it
writes the event again, at a position taken after its answer. So:

- an event with one item (no copy) committed before its position + W: it reached every
  read from then on;
- an event with copies committed before its latest copy's position.

That bound is the event's arrival. An event whose arrival is after the end of its
``time``'s period + W may have been missed by a read that answered that period final: a
late change. The rows are folded once without the late changes, then once more as each
arrives, in arrival order; a row's revision grows at each arrival after its end + W that
changed it (its figures, or whether it has a row at all). Every reader derives the same
revision from the same events, it never falls, and a page with no late change (nearly
every page) is the one fold it always was.

The bound is an upper one: an event whose write began before a period's end and was
positioned after it counts as late even when it committed well within the window, and the
row's revision grows with no final answer having missed it (billing takes the latest, whose
figures are the same). What it cannot see is in docs/usage.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.usage.rules.facts import text_ms
from reservations.usage.rules.ledger import Carried, NodeLedger, fold, folds
from reservations.usage.rules.rows import PERIOD_MS, Granularity, UsageRow

# The moment (ms) an event's item was recorded in its node's feed, as the history gives
# it with each event (an event without it, a fleet load's record, arrived at its time).
RECORDED_AT = "recordedAt"
SETTLE_MS = SETTLE_WINDOW // timedelta(milliseconds=1)


def folded(
    node_id: str,
    events: Sequence[Mapping[str, Any]],
    as_of: int,
    granularity: Granularity,
    rows_of: Callable[[NodeLedger], Sequence[UsageRow]],
    since: Carried | None = None,
) -> list[UsageRow]:
    """The rows ``rows_of`` makes of the node's ledger (:func:`ledger.fold` of ``events``
    up to ``as_of``, from ``since``), by periods of ``granularity``, each at its revision."""

    def without(ids: frozenset[str]) -> Sequence[UsageRow]:
        counted = [event for event in events if event["id"] not in ids] if ids else events
        return rows_of(fold(node_id, counted, as_of, since=since))

    return revised(without, late_arrivals(events, granularity))


def late_arrivals(
    events: Iterable[Mapping[str, Any]], granularity: Granularity
) -> list[tuple[int, str]]:
    """The late changes: each event the fold reads whose arrival (the module's bound) is
    after the end of its ``time``'s period + W, by id with its arrival, in arrival order.
    (The events the fold does not read, such as the clock's, recorded up to a schedule
    period after their moment, change no row: they are not refolded for.)"""
    size = PERIOD_MS[granularity]
    positions: dict[str, set[int]] = {}
    due: dict[str, int] = {}
    for event in events:
        recorded = event.get(RECORDED_AT)
        if recorded is None or not folds(str(event["type"])):
            continue
        event_id = str(event["id"])
        positions.setdefault(event_id, set()).add(recorded)
        due[event_id] = (text_ms(event["time"]) // size + 1) * size + SETTLE_MS
    late = []
    for event_id, recorded in positions.items():
        arrival = max(recorded) if len(recorded) > 1 else min(recorded) + SETTLE_MS
        if arrival > due[event_id]:
            late.append((arrival, event_id))
    return sorted(late)


def revised(
    rows_without: Callable[[frozenset[str]], Sequence[UsageRow]],
    late: Sequence[tuple[int, str]],
) -> list[UsageRow]:
    """The rows of every event (``rows_without(frozenset())``), each with its revision:
    ``rows_without(ids)`` folds every event but those ids. A row's revision is one more for
    each late arrival (``late_arrivals``) after the row's end + W that changed it from what
    it was just before: its figures, or whether there is a row (a late change can make a
    row appear, or leave it and bring it back)."""
    rows = list(rows_without(frozenset()))
    if not late:
        return rows
    pending = [event_id for _, event_id in late]
    before = _figures(rows_without(frozenset(pending)))
    grown: dict[str, int] = {}
    for index, (arrived, _) in enumerate(late):
        still = pending[index + 1 :]
        after = _figures(rows_without(frozenset(still)) if still else rows)
        for row_id in before.keys() | after.keys():
            end = (after.get(row_id) or before[row_id])[0]
            was, now = before.get(row_id, (end, None))[1], after.get(row_id, (end, None))[1]
            if arrived > end + SETTLE_MS and was != now:
                grown[row_id] = grown.get(row_id, 0) + 1
        before = after
    return [replace(row, revision=row.revision + grown.get(row.id, 0)) for row in rows]


def _figures(rows: Iterable[UsageRow]) -> dict[str, tuple[int, Any]]:
    """Each row's end and figures, by id."""
    return {
        row.id: (row.end, (sorted(row.unit_ms.items()), sorted(row.gpu_ms.items()))) for row in rows
    }

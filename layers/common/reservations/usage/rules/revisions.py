"""A row's revision (pure): 1, and one more for each change that arrived after the row was
final and altered its figures.

A row is final once the watermark ``asOf`` (the present less the feeds' settle window
``SETTLE_WINDOW``) has passed its end. A write answered within that window of its event's
position has committed before any read that counts its period as final, so its event is
in every final answer. A write answered later than that writes its event again, recorded
when it answered (``kernel.event_log``): that copy's moment is when the change arrived,
and a row whose end + the window came before it may have been answered final without it.

So nothing needs keeping: from the events themselves (each with ``recordedAt``, the
latest moment a copy of it was recorded), the changes that arrived late for some row are
known. The rows are folded once without them, then once more as each one arrives, in the
order they arrived; a row's revision grows at each arrival that came after it was final
and changed its figures. Every reader derives the same revision for the same events, and it
never falls. With no late change (nearly always) that is the one fold the page needs."""

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
    """The changes that arrived after a row holding their moment was final: each event the
    fold reads, by id, with the latest moment a copy of it was recorded, where that is after
    the end of its ``time``'s period plus the settle window; in the order they arrived.
    (The events the fold does not read, such as the clock's, recorded up to a schedule
    period after their moment, change no row: they are not refolded for.)"""
    size = PERIOD_MS[granularity]
    arrived: dict[str, int] = {}
    due: dict[str, int] = {}
    for event in events:
        recorded = event.get(RECORDED_AT)
        if recorded is None or not folds(str(event["type"])):
            continue
        event_id = str(event["id"])
        arrived[event_id] = max(arrived.get(event_id, recorded), recorded)
        due[event_id] = (text_ms(event["time"]) // size + 1) * size + SETTLE_MS
    return sorted((at, event_id) for event_id, at in arrived.items() if at > due[event_id])


def revised(
    rows_without: Callable[[frozenset[str]], Sequence[UsageRow]],
    late: Sequence[tuple[int, str]],
) -> list[UsageRow]:
    """The rows of every event (``rows_without(frozenset())``), each with its revision:
    ``rows_without(ids)`` folds every event but those ids. A row's revision is one more for
    each late arrival (``late_arrivals``) after the row's end + the settle window that
    changed its figures from what they were just before it."""
    rows = list(rows_without(frozenset()))
    if not late:
        return rows
    pending = [event_id for _, event_id in late]
    before = _figures(rows_without(frozenset(pending)))
    grown: dict[str, int] = {}
    for index, (arrived, _) in enumerate(late):
        still = pending[index + 1 :]
        after = _figures(rows_without(frozenset(still)) if still else rows)
        for row_id, (end, figures) in after.items():
            was = before.get(row_id)
            if was is not None and arrived > end + SETTLE_MS and was[1] != figures:
                grown[row_id] = grown.get(row_id, 0) + 1
        before = after
    return [replace(row, revision=row.revision + grown.get(row.id, 0)) for row in rows]


def _figures(rows: Iterable[UsageRow]) -> dict[str, tuple[int, tuple[Any, ...]]]:
    """Each row's end and figures, by id."""
    return {
        row.id: (row.end, (sorted(row.unit_ms.items()), sorted(row.gpu_ms.items()))) for row in rows
    }

"""A final row's revision: it grows when a change that reached the row after it was final
alters it, and only then. A change's arrival is bounded by its feed items: one item, its
position + the settle window W; with copies (a write that answered W or more after its
position writes its event again after its answer), the latest copy's position. Derived from
the events alone, so every reader agrees: by example, and over random histories whose
events arrive on time or late, read again and again as they arrive, an (id, revision) pair
always names one set of figures, a revision never falls, and a row a late change took away
comes back at a later revision."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reservations.usage.rules.facts import text_ms
from reservations.usage.rules.ledger import NodeLedger
from reservations.usage.rules.revisions import RECORDED_AT, SETTLE_MS, folded, late_arrivals
from reservations.usage.rules.rows import Granularity, UsageRow, node_rows, reservation_rows
from reservations.usage.rules.states import UsageState as S
from tests.usage.histories import DAY, HOUR, MINUTE, NODE, SECOND, T0, event, play, unit
from tests.usage.test_usage_balance import STEPS

pytestmark = pytest.mark.disable_socket

A, B = unit(4), unit(10)
HOURLY = Granularity.HOUR


def recorded(e: dict[str, Any], at: int) -> dict[str, Any]:
    return {**e, RECORDED_AT: at}


def history(copied_at: int | None = None, **extra: int) -> list[dict[str, Any]]:
    """A and B registered at T0, res-a on A and res-b on B at 10 min, A lent at 50 min
    (recorded then, and again at ``copied_at``, ms after T0, when given: its write answered
    late); ``extra``: B lent at 55 min, recorded then and again at ``extra["b"]``. Every
    event is recorded at its time."""
    registered = event("evt-1", T0, "node.registered", f"nodes/{NODE}", topologyGen=1,
                       addedUnitIds=[A, B], units=[{"id": A, "sellableGpus": 1},
                                                   {"id": B, "sellableGpus": 2}])  # fmt: skip
    made = [
        event(
            f"evt-{n}",
            T0 + 10 * MINUTE,
            "reservation.created",
            f"reservations/{rid}",
            status="active",
            startsAt="2025-12-01T00:00:00Z",
            endsAt=None,
            unitIds=[u],
            topologyGen=1,
        )
        for n, rid, u in ((2, "res-a", A), (3, "res-b", B))
    ]
    lent = event("evt-4", T0 + 50 * MINUTE, "reservation.released", "reservations/res-a",
                 releasedUnitIds=[A])  # fmt: skip
    events = [recorded(e, text_at(e)) for e in (registered, *made, lent)]
    if copied_at is not None:
        events.append(recorded(lent, T0 + copied_at))
    if "b" in extra:
        lent_b = event("evt-5", T0 + 55 * MINUTE, "reservation.released", "reservations/res-b",
                       releasedUnitIds=[B])  # fmt: skip
        events += [recorded(lent_b, text_at(lent_b)), recorded(lent_b, T0 + extra["b"])]
    return events


def text_at(e: dict[str, Any]) -> int:
    return text_ms(e["time"])


def rows(events: list[dict[str, Any]], now: int, by_reservation: bool = False) -> list[UsageRow]:
    """The hourly rows of the node's first three hours, as a read at ``now`` (ms) makes them
    from the events it is given."""
    make = reservation_rows if by_reservation else node_rows

    def of(ledger: NodeLedger) -> list[UsageRow]:
        return make(ledger, HOURLY, T0, T0 + 3 * HOUR)

    return folded(NODE, events, now - SETTLE_MS, HOURLY, of)


def test_a_change_on_time_restates_nothing() -> None:
    first, second, third = rows(history(), T0 + 4 * HOUR)
    assert (first.revision, second.revision, third.revision) == (1, 1, 1)
    assert first.unit_ms[S.LENT_IDLE] == 10 * MINUTE


def test_a_change_copied_just_within_the_window_restates_nothing() -> None:
    # Its hour ends at 1 h; a read counts the hour final from 1 h + the window on.
    [first, *_] = rows(history(HOUR + SETTLE_MS), T0 + 4 * HOUR)
    assert first.revision == 1
    [first, *_] = rows(history(HOUR + SETTLE_MS + 1), T0 + 4 * HOUR)
    assert first.revision == 2


def test_a_change_positioned_after_its_periods_end_counts_as_late() -> None:
    """Timed at 59:59.990 and positioned at 1:00:00.010 with no copy: its write answered
    within the window of its position, so it may have committed up to 1:00:05.010, after a
    read answered the first hour final. Its revision grows (the bound is an upper one)."""
    events = history()
    lent = {**events[-1], "time": "2025-12-01T00:59:59.990Z", RECORDED_AT: T0 + HOUR + 10}
    first, second, _ = rows([*events[:-1], lent], T0 + 4 * HOUR)
    assert (first.revision, second.revision) == (2, 1)
    assert late_arrivals([lent], HOURLY) == [(T0 + HOUR + 10 + SETTLE_MS, "evt-4")]


def test_a_change_that_arrived_after_its_hour_was_final_restates_the_hours_final_before_it() -> (
    None
):
    """Lent at 50 min, recorded at 2 h 30 min: the first hour was final (from 1 h + 5 s) and
    the second too (from 2 h + 5 s): both restated. The third was not final yet: its first
    final answer already counts the change."""
    before = rows([e for e in history(150 * MINUTE) if e["id"] != "evt-4"], T0 + 150 * MINUTE)
    first, second, third = rows(history(150 * MINUTE), T0 + 4 * HOUR)
    assert (first.revision, second.revision, third.revision) == (2, 2, 1)
    assert first.unit_ms[S.LENT_IDLE] == 10 * MINUTE
    assert second.unit_ms[S.LENT_IDLE] == HOUR
    assert (before[0].revision, before[0].unit_ms[S.LENT_IDLE]) == (1, 0)
    assert first.id == before[0].id


def test_by_reservation_only_the_rows_the_late_change_altered_are_restated() -> None:
    """B lent late too, but only in the third hour's read: res-a's rows grow with A's late
    release, res-b's with B's; the node's with both."""
    events = history(150 * MINUTE, b=200 * MINUTE)
    held = {(r.key.reservation_id, r.start - T0): r.revision
            for r in rows(events, T0 + 4 * HOUR, by_reservation=True)}  # fmt: skip
    assert held == {
        ("res-a", 0): 2, ("res-a", HOUR): 2, ("res-a", 2 * HOUR): 1,
        ("res-b", 0): 2, ("res-b", HOUR): 2, ("res-b", 2 * HOUR): 2,
    }  # fmt: skip
    first, second, third = rows(events, T0 + 4 * HOUR)
    assert (first.revision, second.revision, third.revision) == (3, 3, 2)


def test_a_late_event_that_alters_no_figure_restates_nothing() -> None:
    """The clock's events are recorded up to a period after their moment; the fold finds
    the moments itself, so their arrival changes no row."""
    expiring = event("evt-9", T0 + 59 * MINUTE, "reservation.expiring", "reservations/res-a",
                     moment="endsAt")  # fmt: skip
    events = [*history(50 * MINUTE), recorded(expiring, T0 + 3 * HOUR)]
    assert late_arrivals(events, HOURLY) == []  # not even folded again for
    assert [r.revision for r in rows(events, T0 + 4 * HOUR)] == [1, 1, 1]


def test_an_event_and_its_copies_arrive_once_at_the_latest_copys_moment() -> None:
    events = history()
    copy, again = (recorded(events[-1], T0 + at) for at in (150 * MINUTE, 151 * MINUTE))
    assert late_arrivals([*events, copy], HOURLY) == [(T0 + 150 * MINUTE, "evt-4")]
    assert late_arrivals([again, copy, *events], HOURLY) == [(T0 + 151 * MINUTE, "evt-4")]
    assert [r.revision for r in rows([copy, *events, copy], T0 + 4 * HOUR)] == [2, 2, 1]


def test_a_row_a_late_change_removes_and_another_brings_back_grows_each_time() -> None:
    """Two PATCHes of res-a's end, at 50 and 55 min, arrive late (copied at 2 h 30 and
    2 h 40): the first ends it at 1 h, so its 01:00 row is gone; the second at 1 h 30, so
    the row is back with half the hour. Three answers, three revisions."""

    def ends(n: int, minute: int, was: str | None, to: str) -> dict[str, Any]:
        return event(f"evt-{n}", T0 + minute * MINUTE, "reservation.updated",
                     "reservations/res-a", changes={"endsAt": {"from": was, "to": to}},
                     reason=None)  # fmt: skip

    first = ends(7, 50, None, "2025-12-01T01:00:00Z")
    second = ends(8, 55, "2025-12-01T01:00:00Z", "2025-12-01T01:30:00Z")
    events = history()
    late = [recorded(first, text_at(first)), recorded(first, T0 + 150 * MINUTE),
            recorded(second, text_at(second)), recorded(second, T0 + 160 * MINUTE)]  # fmt: skip
    answers = []
    for now, seen in ((T0 + 140 * MINUTE, events), (T0 + 155 * MINUTE, [*events, *late[:2]]),
                      (T0 + 165 * MINUTE, [*events, *late])):  # fmt: skip
        held = {r.key.reservation_id: r for r in rows(seen, now, by_reservation=True)
                if r.start == T0 + HOUR}  # fmt: skip
        answers.append(held.get("res-a"))
    before, gone, back = answers
    assert gone is None
    assert before is not None
    assert back is not None
    assert (before.revision, before.unit_ms[S.LENT_IDLE]) == (1, HOUR)
    assert (back.revision, back.unit_ms[S.LENT_IDLE]) == (3, 30 * MINUTE)


def test_by_day_a_change_late_for_its_hour_but_not_its_day_restates_nothing() -> None:
    events = history(150 * MINUTE)

    def daily(ledger: NodeLedger) -> list[UsageRow]:
        return node_rows(ledger, Granularity.DAY, T0, T0 + DAY)

    [day] = folded(NODE, events, T0 + DAY + HOUR, Granularity.DAY, daily)
    assert (day.final, day.revision) == (True, 1)


def test_events_without_a_recorded_moment_arrived_on_time() -> None:
    events = [{k: v for k, v in e.items() if k != RECORDED_AT} for e in history(150 * MINUTE)]
    events = list({e["id"]: e for e in events}.values())
    assert late_arrivals(events, HOURLY) == []
    assert [r.revision for r in rows(events, T0 + 4 * HOUR)] == [1, 1, 1]


# Each event of a random history: its write's position (after its time by up to a few
# seconds: the write's own reads), then either on time (one item; committed, so seen,
# within the window after its position) or late (committed, and copied, that long after).
TIMINGS = st.lists(st.tuples(st.integers(0, 3 * SECOND),
                             st.one_of(st.integers(0, SETTLE_MS - 1),
                                       st.integers(SETTLE_MS, 3 * HOUR))),
                   min_size=60, max_size=60)  # fmt: skip


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, HOUR), STEPS, TIMINGS, st.integers(0, 2**32))
def test_an_id_and_revision_name_one_set_of_figures_and_a_revision_never_falls(
    start: int, steps: list[tuple[str, int, int]], timings: list[tuple[int, int]], seed: int
) -> None:
    h = play(start, steps)
    items: list[tuple[int, dict[str, Any]]] = []  # (seen from, item as the history gives it)
    for n, e in enumerate(h.events):
        positioned, delay = timings[n % len(timings)]
        position = text_at(e) + positioned
        if delay < SETTLE_MS:
            items.append((position + delay, recorded(e, position)))
        else:  # committed at its copy's moment: the window between is docs/usage.md's
            items += [(position + delay, recorded(e, position)),
                      (position + delay, recorded(e, position + delay))]  # fmt: skip
    end = (h.now + 3 * HOUR) // HOUR * HOUR + HOUR
    reads = sorted(random.Random(seed).sample(range(T0, end + 4 * HOUR, 7 * MINUTE), 12))
    named: dict[tuple[str, int], Any] = {}
    last: dict[bool, dict[str, int]] = {False: {}, True: {}}
    absent: dict[bool, dict[str, int]] = {False: {}, True: {}}
    for now in reads:
        seen = [e for visible, e in items if visible <= now]
        for by_reservation in (False, True):
            make = reservation_rows if by_reservation else node_rows

            def of(ledger: NodeLedger, make: Any = make) -> list[UsageRow]:
                return make(ledger, HOURLY, T0, end)

            answered = {row.id: row for row in folded(NODE, seen, now - SETTLE_MS, HOURLY, of)}
            kept, gone = last[by_reservation], absent[by_reservation]
            for row_id, revision in kept.items():
                if row_id not in answered:  # a late change took it: back, it must say so
                    gone[row_id] = revision
            for row in answered.values():
                if not row.final:
                    continue
                figures = (dict(row.unit_ms), dict(row.gpu_ms))
                assert named.setdefault((row.id, row.revision), figures) == figures, row.id
                assert row.revision >= kept.get(row.id, 1), row.id
                assert row.revision > gone.pop(row.id, 0), row.id
                kept[row.id] = row.revision

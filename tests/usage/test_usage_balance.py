"""Usage balances, whatever the node's history (property-based): random histories of one
node (placements, releases, reclaims with notice and their reports, take-backs that wait,
node updates and their reviews, re-affirms, cancels, PATCHes, the clock's moments), each
event possibly delivered twice and out of order. Each unit is at every moment in the state
the contract's table gives from the simulator's own state; a node's states sum to its units
times time exactly; a node's row is its reservations' rows plus its open states (and the
reclaiming of units nothing governs); a replay changes nothing; a reservation's row holds
only what a governed unit can be; a final row stays as the watermark moves on; a day's row
is its hours'."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reservations.usage.rules.ledger import Interval, NodeLedger, fold
from reservations.usage.rules.rows import Granularity, node_rows, reservation_rows
from reservations.usage.rules.states import GOVERNED_STATES, OPEN_STATES, UsageState
from tests.usage.histories import DAY, HOUR, KINDS, NODE, SECOND, T0, History, play

pytestmark = pytest.mark.disable_socket

GAPS = st.one_of(st.just(0), st.integers(1, 10 * SECOND), st.integers(1, HOUR))
# How often each step is drawn: the loop of lending (create, release, place, reclaim, report)
# more than what ends it.
WEIGHTS = {
    "create": 4,
    "release": 4,
    "place": 5,
    "reclaim": 3,
    "report": 3,
    "take_back": 3,
    "node_update": 2,
    "reaffirm": 2,
    "end": 2,
    "patch": 2,
    "cancel": 1,
    "wait": 1,
}
DRAWN = [kind for kind in KINDS for _ in range(WEIGHTS[kind])]
STEPS = st.lists(
    st.tuples(st.sampled_from(DRAWN), GAPS, st.integers(0, 2**12)), min_size=10, max_size=60
)
HISTORIES = st.builds(play, st.integers(0, DAY), STEPS, st.booleans())
# Past the last event, or before it (the rest not counted yet).
LATER = st.integers(-2 * HOUR, 3 * HOUR)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))


def _ledger(history: History, later: int) -> NodeLedger:
    return fold(NODE, history.events, history.now + later)


def _days(ledger: NodeLedger) -> tuple[int, int]:
    """Whole days from the history's first day to past the watermark."""
    return T0, (max(ledger.as_of, T0) // DAY + 1) * DAY


@SETTINGS
@given(history=HISTORIES, later=LATER)
def test_each_unit_is_in_the_state_the_contracts_table_says_at_every_moment(
    history: History, later: int
) -> None:
    """The simulator reads each unit's state by the table from its own state after each
    step and clock moment; the fold must say the same from the events alone."""
    ledger = _ledger(history, later)
    by_unit: dict[str, list[Interval]] = {}
    for interval in ledger.intervals:
        by_unit.setdefault(interval.unit_id, []).append(interval)
    for moment, units in history.seen.items():
        if moment >= ledger.as_of:
            continue
        found = {
            unit_id: (i.state.value, i.reservation_id, i.gpus)
            for unit_id, intervals in by_unit.items()
            for i in intervals
            if i.start <= moment < i.end
        }
        assert found == units, moment - T0


@SETTINGS
@given(history=HISTORIES, later=LATER, granularity=st.sampled_from(Granularity))
def test_a_node_row_sums_to_its_units_times_its_time_to_the_millisecond(
    history: History, later: int, granularity: Granularity
) -> None:
    ledger = _ledger(history, later)
    rows = node_rows(ledger, granularity, *_days(ledger))
    for row in rows:
        assert ledger.first is not None
        counted = max(row.start, ledger.first), min(row.end, ledger.as_of)
        assert (sum(row.unit_ms.values()), sum(row.gpu_ms.values())) == history.units_integral(
            *counted
        )
    everything = history.units_integral(history.timeline[0][0], ledger.as_of)
    assert sum(sum(r.unit_ms.values()) for r in rows) == everything[0]
    assert sum(sum(r.gpu_ms.values()) for r in rows) == everything[1]


@SETTINGS
@given(history=HISTORIES, later=LATER, granularity=st.sampled_from(Granularity))
def test_a_node_row_is_its_reservations_rows_and_its_open_states(
    history: History, later: int, granularity: Granularity
) -> None:
    ledger = _ledger(history, later)
    days = _days(ledger)
    by_period: dict[int, list[dict[UsageState, int]]] = {}
    for row in reservation_rows(ledger, granularity, *days):
        by_period.setdefault(row.start, []).append(dict(row.unit_ms))
    for row in node_rows(ledger, granularity, *days):
        governed = by_period.pop(row.start, [])
        for state in GOVERNED_STATES:
            total = sum(r[state] for r in governed)
            if state is UsageState.RECLAIMING:
                assert row.unit_ms[state] >= total
            else:
                assert row.unit_ms[state] == total
        ungoverned = sum(
            min(i.end, row.end) - max(i.start, row.start)
            for i in ledger.intervals
            if i.reservation_id is None and i.start < row.end and i.end > row.start
        )
        open_and_reclaiming = row.unit_ms[UsageState.OPEN_USED] + row.unit_ms[UsageState.OPEN_IDLE]
        reclaiming_ungoverned = row.unit_ms[UsageState.RECLAIMING] - sum(
            r[UsageState.RECLAIMING] for r in governed
        )
        assert ungoverned == open_and_reclaiming + reclaiming_ungoverned
        assert sum(row.unit_ms.values()) == ungoverned + sum(sum(r.values()) for r in governed)
    assert by_period == {}  # no reservation row outside the node's


@SETTINGS
@given(history=HISTORIES, later=LATER, data=st.data())
def test_a_replayed_duplicated_or_shuffled_stream_folds_the_same(
    history: History, later: int, data: st.DataObject
) -> None:
    once = _ledger(history, later)
    again = data.draw(st.lists(st.sampled_from(history.events), max_size=10))
    delivered = data.draw(st.permutations([*history.events, *again]))
    assert fold(NODE, delivered, once.as_of) == once
    assert fold(NODE, [*history.events, *history.events], once.as_of) == once


@SETTINGS
@given(history=HISTORIES, later=LATER)
def test_a_reservation_row_holds_only_what_a_governed_unit_can_be(
    history: History, later: int
) -> None:
    ledger = _ledger(history, later)
    for interval in ledger.intervals:
        if interval.reservation_id is None:
            assert interval.state in {*OPEN_STATES, UsageState.RECLAIMING}
        else:
            assert interval.state not in OPEN_STATES
            assert interval.reservation_id in history.reservations
    for row in reservation_rows(ledger, Granularity.HOUR, *_days(ledger)):
        assert tuple(row.unit_ms) == tuple(row.gpu_ms) == GOVERNED_STATES
        assert sum(row.unit_ms.values()) > 0


@SETTINGS
@given(history=HISTORIES, past=st.integers(0, 2 * HOUR), more=st.integers(1, 2 * DAY))
def test_a_final_row_stays_as_the_watermark_moves_on(
    history: History, past: int, more: int
) -> None:
    before, after = _ledger(history, past), _ledger(history, past + more)
    later = {row.id: row for row in node_rows(after, Granularity.HOUR, *_days(after))}
    later |= {row.id: row for row in reservation_rows(after, Granularity.HOUR, *_days(after))}
    rows = [*node_rows(before, Granularity.HOUR, *_days(before))]
    rows += reservation_rows(before, Granularity.HOUR, *_days(before))
    for row in rows:
        kept = later[row.id]
        if row.final:
            assert (kept.unit_ms, kept.gpu_ms, kept.final) == (row.unit_ms, row.gpu_ms, True)
        else:
            assert all(kept.unit_ms[s] >= ms for s, ms in row.unit_ms.items())


@SETTINGS
@given(history=HISTORIES, later=LATER)
def test_a_days_row_is_the_sum_of_its_hours_rows(history: History, later: int) -> None:
    ledger = _ledger(history, later)
    for rows in (node_rows, reservation_rows):
        hours: dict[tuple[object, int], dict[UsageState, int]] = {}
        for hour in rows(ledger, Granularity.HOUR, *_days(ledger)):
            day = hours.setdefault((hour.key, hour.start // DAY), {})
            for state, ms in hour.gpu_ms.items():
                day[state] = day.get(state, 0) + ms
        days = {
            (r.key, r.start // DAY): dict(r.gpu_ms)
            for r in rows(ledger, Granularity.DAY, *_days(ledger))
        }
        assert days == hours

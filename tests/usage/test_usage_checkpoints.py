"""A fold carried to an instant (what a checkpoint keeps) goes on exactly as the whole
history does (property-based, over the same random histories as the balance): from any
instant, through the checkpoint's text, the events at or after it (shuffled, some twice)
give the intervals the whole fold gives from there, so every row of a period that starts
at or after it is the same; a checkpoint made from an earlier one is the one made from
the node's first event; and the text is one text per fold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reservations.usage.rules.checkpoint import SHAPE, from_text, to_text
from reservations.usage.rules.facts import text_ms
from reservations.usage.rules.ledger import Carried, carry, fold
from reservations.usage.rules.rows import Granularity, node_rows, reservation_rows
from tests.usage.histories import DAY, HOUR, NODE, History
from tests.usage.test_usage_balance import HISTORIES, LATER, SETTINGS

pytestmark = pytest.mark.disable_socket


def _through_text(carried: Carried) -> Carried:
    read = from_text(to_text(carried))
    assert read is not None
    return read


def _from(history: History, at: int) -> list[dict[str, object]]:
    """The events a read after a checkpoint at ``at`` is given: those at or after it."""
    return [e for e in history.events if text_ms(str(e["time"])) >= at]


def _instants(history: History, before: int) -> st.SearchStrategy[int]:
    """An instant from an hour before the node's first event to just before ``before``."""
    first = text_ms(str(history.events[0]["time"]))
    return st.integers(min(first - HOUR, before - 1), before - 1)


@SETTINGS
@given(history=HISTORIES, later=LATER, data=st.data())
def test_a_fold_carried_to_any_instant_goes_on_as_the_whole_history(
    history: History, later: int, data: st.DataObject
) -> None:
    whole = fold(NODE, history.events, history.now + later)
    at = data.draw(_instants(history, whole.as_of))
    carried = _through_text(carry(NODE, history.events, at))
    again = data.draw(st.lists(st.sampled_from(history.events), max_size=5))
    delivered = data.draw(st.permutations([*_from(history, at), *again]))
    resumed = fold(NODE, delivered, whole.as_of, since=carried)
    assert resumed.intervals == tuple(i for i in whole.intervals if i.end > at)
    assert (resumed.first, resumed.gaps) == (whole.first, whole.gaps)


@SETTINGS
@given(history=HISTORIES, later=LATER, data=st.data())
def test_the_rows_of_periods_from_a_checkpoint_on_are_the_whole_historys(
    history: History, later: int, data: st.DataObject
) -> None:
    whole = fold(NODE, history.events, history.now + later)
    hour = data.draw(_instants(history, whole.as_of)) // HOUR * HOUR
    carried = _through_text(carry(NODE, history.events, hour))
    resumed = fold(NODE, _from(history, hour), whole.as_of, since=carried)
    end = (whole.as_of // DAY + 1) * DAY
    for rows in (node_rows, reservation_rows):
        assert rows(resumed, Granularity.HOUR, hour, end) == rows(
            whole, Granularity.HOUR, hour, end
        )


@SETTINGS
@given(history=HISTORIES, data=st.data())
def test_a_checkpoint_made_from_an_earlier_one_is_the_one_made_from_the_start(
    history: History, data: st.DataObject
) -> None:
    earlier = data.draw(_instants(history, history.now))
    later = data.draw(st.integers(earlier + 1, history.now + HOUR))
    chained = carry(
        NODE, _from(history, earlier), later, since=carry(NODE, history.events, earlier)
    )
    direct = carry(NODE, history.events, later)
    assert to_text(chained) == to_text(direct)
    assert _through_text(direct) == direct


def test_a_checkpoint_of_another_shape_is_not_read():
    text = to_text(Carried(NODE, 0, None, None, {}, {}, (), {}, {}))
    assert from_text(text) is not None
    assert from_text(text.replace(f'"shape":{SHAPE}', f'"shape":{SHAPE + 1}')) is None


def test_a_fold_goes_on_from_a_checkpoint_only_past_its_instant():
    carried = Carried(NODE, 1_000, None, None, {}, {}, (), {}, {})
    with pytest.raises(ValueError, match="only past it"):
        fold(NODE, [], 1_000, since=carried)
    assert fold(NODE, [], 1_001, since=carried).intervals == ()


# Recorded after their moment: the clock's (its pass runs up to a period late) and the
# reviews a node update derives (when the relay derives them).
RECORDED_LATE = {
    "reservation.activated",
    "reservation.expiring",
    "reservation.expired",
    "reservation.needs_review",
}


@SETTINGS
@given(history=HISTORIES, data=st.data())
def test_a_checkpoint_made_before_the_events_recorded_late_needs_none_of_them(
    history: History, data: st.DataObject
) -> None:
    """So a checkpoint, once made, never goes stale: the events that reach the feed after
    their moment change nothing it carries."""
    at = data.draw(_instants(history, history.now + HOUR))
    on_time = [e for e in history.events if e["type"] not in RECORDED_LATE]
    assert to_text(carry(NODE, on_time, at)) == to_text(carry(NODE, history.events, at))

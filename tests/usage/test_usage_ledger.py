"""A node's usage to the millisecond, by example: a lent unit's states are exactly its
events' times apart, a 2-GPU unit counts twice in GPU-ms, the clock switches states at
``startsAt`` and ``endsAt`` exactly, a review lasts from the update to the re-affirm, a
take-back waits in ``reclaiming``; rows up to the watermark, their ids and revisions."""

from __future__ import annotations

from typing import Any

import pytest

from reservations.usage.rules.ledger import Gap, NodeLedger, fold
from reservations.usage.rules.rows import (
    Granularity,
    answer,
    node_rows,
    periods,
    reservation_rows,
)
from reservations.usage.rules.states import UsageState as S
from tests.usage.histories import DAY, HOUR, MINUTE, NODE, SECOND, T0, event, unit

pytestmark = pytest.mark.disable_socket

A, B = unit(4), unit(10)
RES = "res-lab"


class Feed:
    """A node's events, written in order, each at ``T0`` + its offset (ms)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, offset: int, kind: str, subject: str, **data: Any) -> Feed:
        self.events.append(event(f"evt-{len(self.events)}", T0 + offset, kind, subject, **data))
        return self

    def registered(self, gpus: dict[str, int]) -> Feed:
        units = [{"id": u, "sellableGpus": g} for u, g in gpus.items()]
        return self.add(
            0,
            "node.registered",
            f"nodes/{NODE}",
            topologyGen=1,
            addedUnitIds=sorted(gpus),
            units=units,
        )

    def created(
        self,
        offset: int,
        starts: str,
        ends: str | None = None,
        status: str = "active",
        units: tuple[str, ...] = (A,),
    ) -> Feed:
        return self.add(
            offset,
            "reservation.created",
            f"reservations/{RES}",
            status=status,
            startsAt=starts,
            endsAt=ends,
            unitIds=list(units),
            topologyGen=1,
        )

    def ledger(self, as_of: int) -> NodeLedger:
        return fold(NODE, self.events, T0 + as_of)


def totals(ledger: NodeLedger, reservation_id: str | None = None) -> dict[S, int]:
    """Unit-ms by state over the whole ledger (of one reservation's units, if named)."""
    found: dict[S, int] = {}
    for i in ledger.intervals:
        if reservation_id is None or i.reservation_id == reservation_id:
            found[i.state] = found.get(i.state, 0) + i.ms
    return found


def lent_and_reclaimed() -> Feed:
    """Registered at T0; reserved at 1 s; lent at 10 s; a spot VM on it at 25.5 s; reclaimed
    with notice at 60.123 s; the node reports it stopped at 61 s."""
    return (
        Feed()
        .registered({A: 1})
        .created(1_000, "2025-12-01T00:00:00Z")
        .add(10_000, "reservation.released", f"reservations/{RES}", releasedUnitIds=[A])
        .add(25_500, "workload.placed", "workloads/vm-1", tier="spot", unitIds=[A])
        .add(
            60_123,
            "reservation.reclaimed",
            f"reservations/{RES}",
            releasedUnitIds=[],
            terminated=["vm-1"],
        )
        .add(60_123, "workload.termination_requested", "workloads/vm-1", tier="spot", unitIds=[A])
        .add(61_000, "workload.terminated", "workloads/vm-1", outcome="terminated")
    )


def test_a_lent_units_states_are_exactly_its_events_times_apart() -> None:
    ledger = lent_and_reclaimed().ledger(100_000)
    assert totals(ledger) == {
        S.OPEN_IDLE: 1_000,
        S.RESERVED_IDLE: 9_000 + 39_000,
        S.LENT_IDLE: 15_500,
        S.LENT_USED: 34_623,
        S.RECLAIMING: 877,
    }
    assert totals(ledger, RES) == {
        S.RESERVED_IDLE: 48_000,
        S.LENT_IDLE: 15_500,
        S.LENT_USED: 34_623,
        S.RECLAIMING: 877,
    }


def test_a_replayed_duplicated_and_reversed_feed_counts_the_same() -> None:
    feed = lent_and_reclaimed()
    once = feed.ledger(100_000)
    again = fold(NODE, [*reversed(feed.events), *feed.events[2:5]], T0 + 100_000)
    assert again == once


def test_a_two_gpu_unit_counts_twice_in_gpu_ms_and_its_gpus_change_with_the_update() -> None:
    feed = Feed().registered({A: 2, B: 1})
    feed.add(
        HOUR,
        "node.updated",
        f"nodes/{NODE}",
        topologyGen=2,
        changedUnitIds=[B],
        units=[{"id": B, "sellableGpus": 4}],
    )
    (row,) = node_rows(feed.ledger(2 * HOUR), Granularity.DAY, T0, T0 + DAY)
    assert row.unit_ms[S.OPEN_IDLE] == 2 * 2 * HOUR
    assert row.gpu_ms[S.OPEN_IDLE] == 2 * 2 * HOUR + 1 * HOUR + 4 * HOUR


def test_the_clock_switches_at_starts_at_and_ends_at_exactly_with_no_event() -> None:
    feed = (
        Feed()
        .registered({A: 1})
        .created(5 * SECOND, "2025-12-01T01:00:00Z", "2025-12-01T03:00:00Z", status="pending")
    )
    rows = node_rows(feed.ledger(4 * HOUR), Granularity.HOUR, T0, T0 + 4 * HOUR)
    assert [(r.unit_ms[S.OPEN_IDLE], r.unit_ms[S.RESERVED_IDLE]) for r in rows] == [
        (HOUR, 0),
        (0, HOUR),
        (0, HOUR),
        (HOUR, 0),
    ]


def test_a_review_lasts_from_the_node_update_to_the_reaffirm_derived_or_stated() -> None:
    feed = Feed().registered({A: 1}).created(SECOND, "2025-12-01T00:00:00Z")
    feed.add(
        10 * MINUTE,
        "node.updated",
        f"nodes/{NODE}",
        topologyGen=2,
        changedUnitIds=[A],
        units=[{"id": A, "sellableGpus": 1}],
    )
    stated = len(feed.events)
    feed.add(10 * MINUTE, "reservation.needs_review", f"reservations/{RES}", unitIds=[A])
    feed.add(
        40 * MINUTE,
        "reservation.reaffirmed",
        f"reservations/{RES}",
        status="active",
        topologyGen=2,
        unitIds=[A],
    )
    ledger = feed.ledger(HOUR)
    assert totals(ledger, RES)[S.REVIEW] == 30 * MINUTE
    # The node's generations say it without the relay's derived event.
    derived = fold(NODE, feed.events[:stated] + feed.events[stated + 1 :], T0 + HOUR)
    assert derived.intervals == ledger.intervals


def test_a_take_back_is_reclaiming_until_the_report_then_the_audiences_work() -> None:
    feed = Feed().registered({A: 1}).created(0, "2025-12-01T00:00:00Z")
    feed.add(MINUTE, "reservation.released", f"reservations/{RES}", releasedUnitIds=[A])
    feed.add(2 * MINUTE, "workload.placed", "workloads/vm-spot", tier="spot", unitIds=[A])
    feed.add(
        5 * MINUTE,
        "workload.placed",
        "workloads/vm-lab",
        tier="reserved",
        unitIds=[A],
        waitingFor=[{"workloadId": "vm-spot"}],
    )
    feed.add(5 * MINUTE, "workload.termination_requested", "workloads/vm-spot", tier="spot")
    feed.add(
        5 * MINUTE,
        "reservation.reclaimed",
        f"reservations/{RES}",
        releasedUnitIds=[],
        cause="placement",
        terminated=["vm-spot"],
    )
    feed.add(7 * MINUTE, "workload.terminated", "workloads/vm-spot", outcome="terminated")
    feed.add(7 * MINUTE, "workload.started", "workloads/vm-lab")
    assert totals(feed.ledger(10 * MINUTE), RES) == {
        S.RESERVED_IDLE: MINUTE,
        S.LENT_IDLE: MINUTE,
        S.LENT_USED: 3 * MINUTE,
        S.RECLAIMING: 2 * MINUTE,
        S.RESERVED_USED: 3 * MINUTE,
    }


def test_a_node_starts_counting_when_registered_and_stops_at_the_watermark() -> None:
    feed = Feed().add(
        30 * MINUTE,
        "node.registered",
        f"nodes/{NODE}",
        addedUnitIds=[A],
        units=[{"id": A, "sellableGpus": 1}],
    )
    feed.add(HOUR, "workload.placed", "workloads/pod-1", tier="on-demand", unitIds=[A])
    rows = node_rows(feed.ledger(2 * HOUR + 15 * MINUTE), Granularity.HOUR, T0, T0 + 6 * HOUR)
    assert [(r.start - T0, sum(r.unit_ms.values()), r.final) for r in rows] == [
        (0, 30 * MINUTE, True),
        (HOUR, HOUR, True),
        (2 * HOUR, 15 * MINUTE, False),
    ]
    assert rows[1].unit_ms[S.OPEN_USED] == HOUR
    assert rows[2].id == f"{NODE}/hour/2025-12-01T02:00:00Z"


def test_an_event_after_the_watermark_or_of_another_node_is_not_counted() -> None:
    feed = Feed().registered({A: 1})
    feed.add(HOUR, "workload.placed", "workloads/vm-1", tier="spot", unitIds=[A])
    feed.events.append(
        event(
            "evt-other",
            T0 + 1,
            "workload.placed",
            "workloads/vm-2",
            node="node-other",
            tier="spot",
            unitIds=[A],
        )
    )
    assert totals(feed.ledger(HOUR)) == {S.OPEN_IDLE: HOUR}


def test_a_node_registered_without_its_units_gpus_counts_none_and_says_so() -> None:
    feed = Feed().add(0, "node.registered", f"nodes/{NODE}", addedUnitIds=[A])
    ledger = feed.ledger(HOUR)
    assert ledger.gaps == (Gap("evt-0", f"sellableGpus of unit {A}"),)
    (row,) = node_rows(ledger, Granularity.DAY, T0, T0 + DAY)
    assert (row.unit_ms[S.OPEN_IDLE], sum(row.gpu_ms.values())) == (HOUR, 0)


def test_a_fleet_file_load_counts_the_states_it_loads_from_its_moment() -> None:
    node = {
        "units": [{"id": A, "sellableGpus": 2}, {"id": B, "sellableGpus": 1}],
        "reservations": [
            {
                "id": RES,
                "status": "active",
                "startsAt": "2025-11-01T00:00:00Z",
                "reservedUnitIds": [A, B],
                "releasedUnitIds": [A],
            },
        ],
        "workloads": [{"id": "vm-17", "tier": "spot", "unitIds": [A], "state": "running"}],
    }
    ledger = Feed().add(HOUR, "node.loaded", f"nodes/{NODE}", **node).ledger(2 * HOUR)
    assert ledger.first == T0 + HOUR
    assert totals(ledger, RES) == {S.LENT_USED: HOUR, S.RESERVED_IDLE: HOUR}


def test_reservation_rows_are_by_reservation_then_period_and_hold_governed_states() -> None:
    rows = reservation_rows(
        lent_and_reclaimed().ledger(DAY + HOUR), Granularity.DAY, T0, T0 + 2 * DAY
    )
    assert [(r.key.reservation_id, r.start - T0, r.final) for r in rows] == [
        (RES, 0, True),
        (RES, DAY, False),
    ]
    shown = answer(rows[0])
    assert shown["id"] == f"{NODE}/{RES}/day/2025-12-01T00:00:00Z"
    assert (shown["nodeId"], shown["reservationId"], shown["final"], shown["revision"]) == (
        NODE,
        RES,
        True,
        1,
    )
    assert (
        set(shown["unitMs"])
        == set(shown["gpuMs"])
        == {"review", "reclaiming", "lent_used", "lent_idle", "reserved_used", "reserved_idle"}
    )
    assert (shown["start"], shown["end"], shown["asOf"]) == (
        "2025-12-01T00:00:00Z",
        "2025-12-02T00:00:00Z",
        "2025-12-02T01:00:00.000Z",
    )


@pytest.mark.parametrize(
    ("start", "end", "granularity"),
    [
        (T0 + MINUTE, T0 + HOUR, Granularity.HOUR),
        (T0, T0 + HOUR, Granularity.DAY),
        (T0 + HOUR, T0 + HOUR, Granularity.HOUR),
    ],
)
def test_periods_are_whole_utc_hours_or_days(
    start: int, end: int, granularity: Granularity
) -> None:
    with pytest.raises(ValueError, match="whole UTC"):
        periods(start, end, granularity)
    assert periods(T0, T0 + 2 * HOUR, Granularity.HOUR) == [
        (T0, T0 + HOUR),
        (T0 + HOUR, T0 + 2 * HOUR),
    ]

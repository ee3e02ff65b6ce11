"""The fixtures and the fleet of the use cases' tests over in-memory fakes (no moto): node-a,
its units, workloads and reservation, a clock the test moves, what the code logs and counts.
A plugin of the root conftest; its files forbid sockets by their own marker."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations.kernel.caller import Caller
from reservations.kernel.observability import metrics
from reservations.nodes.models.partition import (
    Node,
    Reservation,
    ReservationStatus,
    Termination,
    Tier,
    Unit,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from tests.support.fakes import FakeClock, FakeQueue, FakeTable

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
QUEUE = "https://sqs.test/node-a.fifo"
UNITS = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"]
BOTH = frozenset({"reservation.read", "reservation.capacity"})
BROKER = Caller("key-broker", "org-broker", BOTH, key_hash="hash-broker")
OWNER = Caller("key-owner", "org-acme", BOTH, key_hash="hash-owner")
OPERATOR = Caller("key-op", "org-op", BOTH, platform_operator=True, key_hash="hash-op")
STRANGER = Caller("key-stranger", "org-other", BOTH, key_hash="hash-stranger")
AUDIENCE = Caller("key-lab", "org-lab", BOTH, key_hash="hash-lab")


def reservation(
    reservation_id: str = "res-1",
    status: ReservationStatus = ReservationStatus.ACTIVE,
    reserved: tuple[str, ...] = tuple(UNITS),
    released: tuple[str, ...] = tuple(UNITS[:3]),
    **overrides: object,
) -> Reservation:
    fields: dict[str, object] = {
        "id": reservation_id,
        "node_id": "node-a",
        "status": status,
        "starts_at": NOW - timedelta(days=1),
        "ends_at": NOW + timedelta(days=30),
        "created_at": NOW - timedelta(days=2),
        "updated_at": NOW - timedelta(days=2),
        "allowed_org_ids": ("org-lab",),
        "managing_org_ids": ("org-broker",),
        "reserved_unit_ids": reserved,
        "released_unit_ids": released,
        "contract_ref": "C-1",
        **overrides,
    }
    return Reservation(**fields)  # type: ignore[arg-type]


def workload(
    workload_id: str,
    unit_ids: tuple[str, ...],
    tier: Tier = Tier.SPOT,
    state: WorkloadState = WorkloadState.RUNNING,
    **overrides: object,
) -> Workload:
    return Workload(
        workload_id,
        WorkloadKind.VM,
        tier,
        "org-spot",
        unit_ids,
        state,
        **overrides,  # type: ignore[arg-type]
    )


def unit(unit_id: str, claimed_by: str | None = None, **overrides: object) -> Unit:
    return Unit(unit_id, "vfio-group", "h100", 1, True, claimed_by=claimed_by, **overrides)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


@pytest.fixture
def queue() -> FakeQueue:
    return FakeQueue()


@pytest.fixture
def store(clock: FakeClock) -> FakeTable:
    """node-a: 04 spot on 04, a spot VM spanning 05 and 06, a reserved VM on 07, a spot VM
    already terminating on 08, and res-1 reserving all five, 04-06 released."""
    store = FakeTable(clock)
    workloads = [
        workload("vm-spot", (UNITS[0],)),
        workload("vm-span", (UNITS[1], UNITS[2])),
        workload("vm-res", (UNITS[3],), tier=Tier.RESERVED),
        workload(
            "vm-term",
            (UNITS[4],),
            state=WorkloadState.TERMINATING,
            termination=Termination(
                id="t-old", reservation_id="res-1", requested_at=NOW - timedelta(minutes=5)
            ),
        ),
    ]
    claims = {u: f"vm:{w.id}" for w in workloads for u in w.unit_ids}
    store.add(
        Node("node-a", "org-acme", queue_url=QUEUE),
        [unit(u, claims.get(u)) for u in UNITS],
        [reservation()],
        workloads,
    )
    return store


@pytest.fixture
def emitted() -> Iterator[dict[str, Any]]:
    """The metrics the code adds, as Powertools will flush them: name -> values."""
    metrics.clear_metrics()
    yield metrics.metric_set
    metrics.clear_metrics()


@pytest.fixture
def said(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """What the product's logger (the one Logger of every function) writes."""
    caplog.set_level("DEBUG", logger="reservations")
    return caplog

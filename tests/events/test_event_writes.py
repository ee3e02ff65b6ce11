"""Events made by the real writes reach every outlet, in-process over moto: an independent
consumer (a rule on the bus to a queue) counts, after a burst of reclaims and releases, exactly
the committed changes' events, each at least once, none missing; a node update's reviews
are written by the relay, once, and reach the reservations' orgs."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import node_event, reclaim_event, release_event
from devstack.functions import invoke, load_function
from reservations.events.table.feeds import pending_event_from_item
from reservations.events.table.outlets import DerivedEvents
from reservations.kernel.event_log import SETTLE_WINDOW
from tests.support import event_scenario as s
from tests.support import state
from tests.support.event_table import BusWatch, StreamRelay
from tests.support.ports import swap_ports

pytestmark = pytest.mark.moto

UNITS = [f"0000:{0x10 + i:02x}:00.0" for i in range(8)]
BROKER = "Bearer vl_local_test_broker"
OPERATOR = "Bearer vl_local_test_node_operator"
EVENT_OF = {"reclaim": "reservation.reclaimed", "release": "reservation.released"}


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("reclaim", "release", "put_node", "event_relay", "node_events", "org_events")
    return {name: load_function(name) for name in names}


@pytest.fixture
def burst_node(aws: Any, load_fleet: Any) -> Any:
    """node-a: res-1 (org-broker) holds 8 units, all lent, a spot VM on each of the first 6."""
    reservation = f.reservation("res-1", UNITS, releasedUnitIds=UNITS)
    workloads = [f.workload(f"vm-{i}", [unit]) for i, unit in enumerate(UNITS[:6])]
    node = f.node("node-a", [f.unit(u) for u in UNITS], [reservation], workloads)
    operator = {"key": OPERATOR.removeprefix("Bearer "), "orgId": "org-platform",
                "permissions": ["node.write", "reservation.read"]}  # fmt: skip
    load_fleet(s.with_feed_permissions(f.fleet([node], extra_keys=[operator])))
    return aws


def relay_all(aws: Any, relay: ModuleType) -> None:
    """The stream until it is drained (the relay's own writes included)."""
    stream = StreamRelay(aws, relay)
    while stream.run():
        pass


def test_after_a_burst_the_bus_holds_exactly_the_committed_changes(burst_node, functions):
    """40 calls, reclaims and releases of random units, some dry runs, some refused (units
    outside the reservation): the events the consumer counts on the bus are those of the
    node's feed, and those are one per 2xx real call (and one termination request per
    newly terminated workload)."""
    rng = random.Random(20)
    watch = BusWatch()
    made: Counter[str] = Counter()
    for n in range(40):
        units = rng.sample(UNITS, rng.randint(1, 3))
        body: dict[str, Any] = {"unitIds": units, "reason": f"burst {n}"}
        if rng.random() < 0.15:
            body["dryRun"] = True
        if rng.random() < 0.1:
            body["unitIds"] = ["0000:7f:00.0"]  # not the reservation's: a 422
        name, build = rng.choice([("reclaim", reclaim_event), ("release", release_event)])
        result = invoke(functions[name], build("node-a", "res-1", body, BROKER))
        assert result.status in (200, 422), result.body_text
        if result.status == 200 and not body.get("dryRun"):
            made[EVENT_OF[name]] += 1
    committed = state.events(burst_node, "node-a")
    counted = Counter(e["type"] for e in committed)
    assert counted["reservation.reclaimed"] == made["reservation.reclaimed"]
    assert counted["reservation.released"] == made["reservation.released"]
    # One request per workload the burst sent to terminating, never twice for one.
    assert counted["workload.termination_requested"] == 6 - running(burst_node)
    relay_all(burst_node, functions["event_relay"])
    StreamRelay(burst_node, functions["event_relay"]).run()  # a replayed stream: harmless
    arrived = watch.events()
    assert {e["id"] for e in arrived} == {e["id"] for e in committed}  # each, none missing
    by_id = {e["id"]: e for e in committed}
    assert all(event == by_id[event["id"]] for event in arrived)


def running(aws: Any) -> int:
    return sum(
        1 for i in state.partition(aws, "node-a") if i["SK"].startswith("WL#")
        and i["state"] == "running"
    )  # fmt: skip


def _update(generation: int) -> dict[str, Any]:
    """node-a with its first unit of another model: res-1 and res-2 hold it."""
    units = [f.unit(UNITS[0], gpuModelId="nvidia-b200"), *(f.unit(u) for u in UNITS[1:])]
    return {"ownerOrgId": "org-acme", "topologyGen": generation, "units": units}


def test_a_node_updates_reviews_are_written_by_the_relay(aws, load_fleet, functions, monkeypatch):
    reservations = [
        f.reservation("res-1", UNITS[:2]),
        f.reservation("res-2", UNITS[:1], managingOrgIds=["org-reclaimer"],
                      allowedOrgIds=["org-lab2"], startsAt=f.days(1)),
        f.reservation("res-3", UNITS[2:3]),
    ]  # fmt: skip
    operator = {"key": OPERATOR.removeprefix("Bearer "), "orgId": "org-platform",
                "permissions": ["node.write"]}  # fmt: skip
    node = f.node("node-a", [f.unit(u) for u in UNITS], reservations)
    load_fleet(s.with_feed_permissions(f.fleet([node], extra_keys=[*s.fleet_keys(), operator])))
    result = invoke(functions["put_node"], node_event("node-a", _update(2), OPERATOR))
    assert result.status == 200, result.body_text
    [updated] = state.events(aws, "node-a")
    assert updated["data"]["reviewedReservationCount"] == 2
    relay_all(aws, functions["event_relay"])
    reviews = state.events(aws, "node-a", event_type="reservation.needs_review")
    assert sorted(e["subject"] for e in reviews) == ["reservations/res-1", "reservations/res-2"]
    assert {e["time"] for e in reviews} == {updated["time"]}
    # Relayed again (a crash before the update's mark was settled): it goes on from where
    # it got, the end, and writes no review twice.
    [item] = [
        i
        for i in state.whole_table(aws)
        if i["PK"] == "NODEEVT#node-a" and i["eventId"] == updated["id"]
    ]
    assert DerivedEvents().deliver([pending_event_from_item(item).stored]) == set()
    assert state.events(aws, "node-a", event_type="reservation.needs_review") == reviews
    # res-2's managers read its review from their own feed (a settle window later); res-3's
    # orgs have none.
    later = lambda: datetime.now(UTC) + SETTLE_WINDOW  # noqa: E731
    swap_ports(monkeypatch, functions["org_events"], clock=later)
    relay_all(aws, functions["event_relay"])  # the reviews, like any event
    feed = invoke(functions["org_events"], s.org_feed_event(s.bearer("reclaimer"), None))
    assert {e["subject"] for e in feed.body["items"]} == {"reservations/res-2"}
    assert all("unrelayed" not in i for i in state.whole_table(aws))

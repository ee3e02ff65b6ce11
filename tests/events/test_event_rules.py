"""The event model and its pure rules: the envelope, every type's data, stable ids, who may
see what, and where a feed's page starts."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import get_args

import pytest

from reservations.capacity.rules import events as capacity_events
from reservations.events.models import EVENT_TYPES as FEED_TYPES
from reservations.events.models import EventTypeName, NodeFeedAccess
from reservations.events.rules.visibility import (
    feed_org_ids,
    in_node_feed_of,
    may_read_node_feed,
    may_read_org_feed,
    sees_whole_node,
    shows_key_id,
)
from reservations.kernel.caller import Caller
from reservations.kernel.envelope import (
    EVENT_TYPES,
    Actor,
    CloudEvent,
    EventContext,
    EventType,
    declare_event_types,
    event_id,
)
from reservations.kernel.times import LAST_MOMENT, format_event_time
from reservations.lifecycle.rules import events as reservations_events
from reservations.nodes.models.partition import ReviewScope
from reservations.nodes.rules import events as nodes_events
from reservations.terminations.rules import events as terminations_events
from reservations.workloads.rules import events as workloads_events
from tests.support import event_scenario as s

pytestmark = pytest.mark.disable_socket

ACCESS = NodeFeedAccess("org-acme",
                        dict.fromkeys(("org-broker", "org-lab", "org-reclaimer", "org-lab2"),
                                      LAST_MOMENT),
                        frozenset({"org-spotbuyer", "org-walkin"}))  # fmt: skip
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def caller(kind: str, permissions: tuple[str, ...] = ("reservation.read", "events.read")) -> Caller:
    _, org = s.CALLERS[kind]
    return Caller(f"key-{kind}", org, frozenset(permissions), platform_operator=kind == "operator")


def test_the_envelope_is_cloudevents_json_as_the_contract_shows():
    stored = capacity_events.reservation_reclaimed(
        s.context(1), s.RES_1, ["0000:04:00.0"], "lab needs them", ["vm-17"], []
    )
    envelope = stored.event.envelope(show_key_id=False)
    assert list(envelope) == [
        "specversion", "id", "type", "source", "subject", "time", "datacontenttype", "data",
    ]  # fmt: skip
    assert envelope["specversion"] == "1.0"
    assert re.fullmatch(r"evt-[a-z2-7]{26}", envelope["id"])
    assert envelope["type"] == "reservation.reclaimed"
    assert envelope["source"] == "/v1/nodes/node-a"
    assert envelope["subject"] == "reservations/res-1"
    assert envelope["time"] == "2026-11-30T12:00:01.001Z"
    assert envelope["datacontenttype"] == "application/json"
    assert envelope["data"] == {
        "actor": {"orgId": "org-broker"},
        "reason": "lab needs them",
        "unitIds": ["0000:04:00.0"],
        "releasedUnitIds": ["0000:05:00.0"],
        "terminated": ["vm-17"],
        "skipped": [],
    }
    shown = stored.event.envelope(show_key_id=True)
    assert shown["data"]["actor"] == {"orgId": "org-broker", "keyId": "key-broker-1"}


def test_the_stored_form_reads_back_as_the_same_event():
    for stored in s.every_type():
        again = CloudEvent.from_json(stored.event.to_json())
        assert again == stored.event
        assert again.envelope(True) == stored.event.envelope(True)


def test_every_type_of_the_contract_is_built_with_its_subject():
    # A take-back's waiting workload started: built here, out of the scenario the feeds count.
    context = EventContext("node-a", "org-acme", "term-9", s.T0)
    started = terminations_events.workload_started(context, s.VM_2)
    events = [*s.every_type(), *s.clock_types(), started]
    assert {e.event.type for e in events} == set(EVENT_TYPES)
    assert set(get_args(EventTypeName)) == set(EVENT_TYPES) == set(FEED_TYPES)
    subjects = {e.event.type.value: e.event.subject for e in events}
    assert subjects["reservation.cancelled"] == "reservations/res-1"
    assert subjects["workload.terminated"] == "workloads/vm-1"
    assert subjects["node.updated"] == "nodes/node-a"
    assert subjects["reservation.expired"] == "reservations/res-1"
    assert subjects["workload.started"] == "workloads/vm-2"


def test_a_clock_event_is_the_clocks_at_its_moment_and_names_it():
    for stored in s.clock_types():
        envelope = stored.event.envelope(show_key_id=True)
        assert envelope["data"]["actor"] == {"system": "clock"}
        assert envelope["data"]["moment"] in ("startsAt", "endsAt")
        assert stored.audience_org_ids == {"org-broker", "org-lab"}
        assert CloudEvent.from_json(stored.event.to_json()) == stored.event


def test_the_data_of_each_type_says_what_its_consumers_need():
    data = {e.event.type.value: e.event.envelope(True)["data"] for e in s.every_type()}
    requested = data["workload.termination_requested"]
    assert requested["reservationId"] == "res-2"
    assert requested["unitIds"] == ["0000:06:00.0"]
    assert requested["reason"] == "lab needs them"
    # The commit's time to the millisecond; without a notice the deadline is the request.
    assert requested["requestedAt"] == requested["terminateAt"] == "2026-11-30T12:00:06.006Z"
    assert requested["terminationId"] == "term-1"
    terminated = data["workload.terminated"]
    assert terminated["outcome"] == "terminated"
    assert terminated["time"] == "2026-11-30T12:00:08.000Z"
    assert "actor" not in terminated  # the node reported it: no key made this change
    assert data["workload.termination_stuck"]["deliveries"] == 5
    assert data["node.updated"]["topologyGen"] == 2
    assert data["node.updated"]["addedUnitIds"] == ["0000:08:00.0"]
    assert data["node.updated"]["removedUnitIds"] == []
    assert data["node.updated"]["changedUnitIds"] == ["0000:04:00.0"]
    assert data["node.registered"]["addedUnitIds"] == ["0000:04:00.0"]
    assert data["reservation.needs_review"] == {
        "actor": {"orgId": "org-platform", "keyId": "key-operator-1"},
        "topologyGen": 2,
        "unitIds": ["0000:04:00.0"],
    }
    assert data["workload.ended"]["freedUnitIds"] == ["0000:07:00.0"]
    assert data["reservation.created"]["managingOrgIds"] == ["org-broker"]
    assert data["reservation.cancelled"]["previousStatus"] == "active"
    assert "reason" not in data["reservation.released"]  # absent, never null


def test_an_event_id_is_the_same_when_the_write_is_rebuilt_and_differs_otherwise():
    def reclaimed(context):
        return capacity_events.reservation_reclaimed(
            context, s.RES_1, ["0000:04:00.0"], None, [], []
        )

    first, again = reclaimed(s.context(1)), reclaimed(s.context(1))
    assert first.id == again.id
    later = s.context(1)
    other_change = type(later)(later.node_id, later.owner_org_id, "change-other", later.at)
    assert reclaimed(other_change).id != first.id
    other_node = type(later)("node-b", later.owner_org_id, later.change_id, later.at)
    assert reclaimed(other_node).id != first.id
    # One reclaim makes several events: each its own id.
    requested = terminations_events.termination_requested(
        s.context(1), s.VM_1_TERMINATING, "term-1", s.RES_1, None
    )
    assert requested.id != first.id


def test_an_events_time_is_kept_to_the_millisecond_and_sorts_as_text():
    moment = datetime(2026, 1, 2, 3, 4, 5, 678_999, tzinfo=UTC)
    assert format_event_time(moment) == "2026-01-02T03:04:05.678Z"
    times = [moment + timedelta(microseconds=n * 999) for n in range(50)]
    assert sorted(format_event_time(t) for t in times) == [format_event_time(t) for t in times]
    early = workloads_events.workload_placed(s.context(1), s.VM_2)
    late = workloads_events.workload_placed(s.context(2), s.VM_2)
    assert format_event_time(early.event.time) < format_event_time(late.event.time)


@pytest.mark.parametrize("stored", s.every_type(), ids=lambda e: e.event.type.value)
def test_who_sees_each_event_in_a_node_feed_is_the_contracts_table(stored):
    seen_by = set()
    for kind in s.CALLERS:
        who = caller(kind)
        if may_read_node_feed(who, ACCESS, NOW) and in_node_feed_of(
            stored, who, sees_whole_node(who, ACCESS)
        ):
            seen_by.add(kind)
    assert seen_by == s.SEES[stored.event.type.value]


@pytest.mark.parametrize("stored", s.every_type(), ids=lambda e: e.event.type.value)
def test_an_event_goes_to_the_feeds_of_exactly_the_orgs_that_may_see_it(stored):
    feeds = feed_org_ids(stored)
    expected = {
        s.CALLERS[kind][1] for kind in s.SEES[stored.event.type.value] if kind != "operator"
    }
    # The reservation's audience and managers of res-2 (org-lab2) are not callers here.
    assert feeds - {"org-lab2"} == expected


def test_a_workload_org_sees_its_own_workloads_events_only():
    walkin = workloads_events.workload_placed(s.context(1), s.VM_3)
    who = caller("workload_org")
    assert not in_node_feed_of(walkin, who, sees_whole_node(who, ACCESS))
    assert feed_org_ids(walkin) == {"org-acme", "org-walkin"}


def test_key_ids_are_shown_to_the_operator_and_the_owner_only():
    shown = {kind for kind in s.CALLERS if shows_key_id(caller(kind), "org-acme")}
    assert shown == s.SEES_KEY_IDS
    # Not even to the org that made the call (the broker made the reclaim).
    assert not shows_key_id(caller("manager"), "org-acme")


def test_the_node_feed_is_for_named_orgs_with_reservation_read_and_the_org_feed_needs_events_read():
    assert may_read_node_feed(caller("workload_org"), ACCESS, NOW)
    assert not may_read_node_feed(caller("stranger"), ACCESS, NOW)
    assert not may_read_node_feed(caller("owner", ("events.read",)), ACCESS, NOW)
    assert may_read_node_feed(caller("operator"), NodeFeedAccess("org-other"), NOW)
    assert may_read_org_feed(caller("stranger"))
    assert not may_read_org_feed(caller("owner", ("reservation.read",)))


def test_actor_is_absent_when_no_key_made_the_change():
    stuck = terminations_events.termination_stuck(s.context(3, None), s.VM_1_TERMINATING, 5)
    assert "actor" not in stuck.event.envelope(True)["data"]
    assert json.loads(stuck.event.to_json())["data"]["deliveries"] == 5


def test_the_bus_and_the_feeds_get_the_same_envelope_text():
    stored = reservations_events.reservation_cancelled(s.context(4), s.RES_1, None, "pending")
    assert json.loads(stored.event.to_json()) == stored.event.envelope(True)
    assert Actor("org-broker", "key-broker-1") == stored.event.actor


def test_an_event_id_is_a_fixed_digest_of_node_write_type_and_subject():
    # Known answers: a consumer deduplicating by id across a relay's restarts relies on the
    # same inputs giving this very id (lower-case base32, fields kept apart).
    placed = event_id("node-a", "change-1", workloads_events.WorkloadEvent.PLACED, "workloads/vm-1")
    assert placed == "evt-psaue472nmejbdkthb5w2ytim3"
    # The fields are kept apart: moving a character across a boundary changes the id.
    shifted = event_id(
        "node-ac", "hange-1", workloads_events.WorkloadEvent.PLACED, "workloads/vm-1"
    )
    assert shifted != placed


def test_each_types_data_names_every_field_as_the_contract_does():
    terms = replace(s.RES_1, contract_ref="contract-7")
    created = reservations_events.reservation_created(s.context(1), terms).event.data
    assert created["contractRef"] == "contract-7"
    cancelled = reservations_events.reservation_cancelled(
        s.context(2), s.RES_1, "contract ended", "active"
    )
    assert cancelled.event.data == {
        "reason": "contract ended",
        "previousStatus": "active",
        "unitIds": ["0000:04:00.0", "0000:05:00.0"],
    }
    registered = nodes_events.node_registered(
        s.context(3), s.NODE_A, ["0000:05:00.0", "0000:04:00.0"],
        {"0000:05:00.0": 2, "0000:04:00.0": 1},
    )  # fmt: skip
    assert registered.event.data == {
        "topologyGen": 2,
        "addedUnitIds": ["0000:04:00.0", "0000:05:00.0"],
        "removedUnitIds": [],
        "changedUnitIds": [],
        "units": [
            {"id": "0000:04:00.0", "sellableGpus": 1},
            {"id": "0000:05:00.0", "sellableGpus": 2},
        ],
    }
    updated = nodes_events.node_updated(
        s.context(4), s.NODE_A, ["0000:06:00.0"], ["0000:04:00.0"], ["0000:05:00.0"],
        gpus={"0000:05:00.0": 4, "0000:06:00.0": 1, "0000:07:00.0": 1},
    )  # fmt: skip
    assert updated.event.data["units"] == [  # the units added and changed, each with its GPUs
        {"id": "0000:05:00.0", "sellableGpus": 4},
        {"id": "0000:06:00.0", "sellableGpus": 1},
    ]


def test_a_terminations_events_carry_its_id_reservation_and_request_time():
    vm = replace(s.VM_1_TERMINATING, used_from=s.T0)  # placed at T0
    workload = {"kind": "vm", "tier": "spot", "orgId": "org-spotbuyer", "unitIds": ["0000:06:00.0"]}
    termination = {"terminationId": "term-1", "reservationId": "res-2"}
    ended = workloads_events.workload_ended(s.context(1), vm, ["0000:06:00.0"], gpus=1)
    assert ended.event.data == {
        **workload,
        "freedUnitIds": ["0000:06:00.0"],
        "terminationId": "term-1",
        # Its own use, to the end's commit (the event's time): 1.001 s on 1 GPU.
        "usedFrom": "2026-11-30T12:00:00.000Z",
        "usedTo": "2026-11-30T12:00:01.001Z",
        "gpuMs": 1001,
    }
    stopped_at = s.T0 + timedelta(seconds=9)
    terminated = terminations_events.workload_terminated(
        s.context(2), vm, "gone", stopped_at, ["org-reclaimer"], gpus=2
    )
    assert terminated.event.data == {
        **workload,
        **termination,
        "outcome": "gone",
        "time": "2026-11-30T12:00:09.000Z",
        "requestedAt": "2026-11-30T12:00:00Z",
        # To the report's commit, not to the node's report time (``time``): 2.002 s on 2.
        "usedFrom": "2026-11-30T12:00:00.000Z",
        "usedTo": "2026-11-30T12:00:02.002Z",
        "gpuMs": 4004,
    }
    assert terminated.event.data["usedTo"] == json.loads(terminated.event.to_json())["time"]
    stuck = terminations_events.termination_stuck(s.context(3), vm, 4)
    assert stuck.event.data == {
        **workload,
        **termination,
        "requestedAt": "2026-11-30T12:00:00Z",
        "deliveries": 4,
    }


def test_a_node_update_puts_its_new_generation_on_each_review_it_derives():
    units = {"0000:04:00.0": 0, "0000:05:00.0": 0}  # 05 removed by generation 7
    scope = ReviewScope("wr-7", 7, frozenset({"0000:05:00.0"}), units, {"0000:04:00.0": 0})
    updated = nodes_events.node_updated(
        s.context(1), replace(s.NODE_A, topology_gen=7), [], ["0000:05:00.0"], [], 1, scope
    )
    other = replace(s.RES_2, reserved_unit_ids=("0000:06:00.0",))
    (review,) = nodes_events.reviews_derived(updated, [replace(s.RES_1, topology_gen=2), other])
    assert review.event.data == {"topologyGen": 7, "unitIds": ["0000:05:00.0"]}
    assert review.event.time == updated.event.time
    assert review.event.actor == updated.event.actor
    assert updated.event.data["reviewedReservationCount"] == 1
    # An update that reviews none keeps no scope, and derives none.
    none = nodes_events.node_updated(s.context(1), s.NODE_A, [], [], ["0000:05:00.0"], 0, scope)
    assert (none.review, nodes_events.reviews_derived(none, [s.RES_1])) == (None, [])
    assert "reviewedReservationCount" not in none.event.data


def test_a_type_is_declared_by_one_slice_only():
    """Each slice declares the types it builds; a type declared twice is refused."""
    assert EVENT_TYPES["workload.placed"] is workloads_events.WorkloadEvent

    class Twice(EventType):
        PLACED = "workload.placed"

    with pytest.raises(TypeError, match=r"Twice: workload\.placed is WorkloadEvent's"):
        declare_event_types(Twice)
    assert EVENT_TYPES["workload.placed"] is workloads_events.WorkloadEvent

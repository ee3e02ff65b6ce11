"""Reclaim behaviours that mutation testing showed no test would miss: what the store holds
after the commit, one termination id per workload, the audit record, the shown reservation,
and the backoff between attempts."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from reservations.logic import retries
from reservations.logic.list_units import list_units
from reservations.logic.retries import MAX_ATTEMPTS
from reservations.models.domain import ReservationStatus
from reservations.models.errors import (
    Conflict,
    IdempotencyKeyReused,
    ReservationNotActive,
    UnitsNotInReservation,
)
from reservations.models.requests import RawBody
from tests.logic.conftest import BROKER, NOW, QUEUE, UNITS, reservation
from tests.logic.test_reclaim import Conflicting
from tests.support.fakes import ports
from tests.support.writes import reclaim


def post(store, queue, clock, body, key=None, caller=BROKER, res="res-1", sleep=None):
    wired = ports(store, clock, queue)
    if sleep is not None:
        wired = replace(wired, sleep=sleep)
    outcome = reclaim(caller, "node-a", res, RawBody(json.dumps(body)), key, wired)
    return outcome.status, json.loads(outcome.body)


def test_the_reclaimed_units_leave_the_spot_market_in_the_store(store, queue, clock):
    post(store, queue, clock, {"unitIds": [UNITS[1]]})
    stored = store.nodes["node-a"].reservations["res-1"]
    assert stored.released_unit_ids == (UNITS[0], UNITS[2])
    assert stored.updated_at == NOW
    released = {u.id: u.released for u in list_units(BROKER, "node-a", store, NOW)}
    assert released[UNITS[1]] is False
    assert released[UNITS[0]] is True


def test_each_terminated_workload_gets_its_own_termination_id(store, queue, clock):
    post(store, queue, clock, {"unitIds": UNITS[:2]})
    messages = queue.sent(QUEUE)
    assert len({m.termination_id for m in messages}) == len(messages) == 2
    workloads = store.nodes["node-a"].workloads
    for message in messages:
        assert workloads[message.workload_id].termination_id == message.termination_id


def test_the_audit_record_says_who_reclaimed_what_and_each_reclaim_has_its_own(store, queue, clock):
    post(store, queue, clock, {"unitIds": UNITS[:2]})
    post(store, queue, clock, {"unitIds": [UNITS[3]]})  # the same instant
    first, second = store.audit
    assert first.write_id != second.write_id
    audit = first.audit
    assert (first.caller_org_id, first.caller_key_id) == ("org-broker", "key-broker")
    assert audit.unit_ids == tuple(UNITS[:2])
    assert audit.released_before == tuple(UNITS[:3])
    assert (audit.terminated, audit.skipped) == (("vm-span", "vm-spot"), ())
    assert second.audit.skipped == ("vm-res",)


def test_the_answer_shows_the_reservation_in_full(store, queue, clock):
    partition = store.nodes["node-a"]
    partition.reservations["res-1"] = replace(
        partition.reservations["res-1"], reason="quarterly", topology_gen=7
    )
    _, body = post(store, queue, clock, {"unitIds": [UNITS[3]]})
    assert (body["endsAt"], body["contractRef"]) == ("2026-12-29T12:00:00Z", "C-1")
    assert (body["reason"], body["topologyGen"]) == ("quarterly", 7)


def test_units_outside_are_named_in_the_unit_ids_field(store, queue, clock):
    with pytest.raises(UnitsNotInReservation) as refused:
        post(store, queue, clock, {"unitIds": ["0000:0a:00.0"]})
    assert [d.field for d in refused.value.details] == ["unitIds[0]"]


def test_a_dry_run_refusal_keeps_nothing_under_the_key(store, queue, clock):
    partition = store.nodes["node-a"]
    active = partition.reservations["res-1"]
    partition.reservations["res-1"] = replace(active, status=ReservationStatus.CANCELLED)
    with pytest.raises(ReservationNotActive):
        post(store, queue, clock, {"unitIds": [UNITS[0]], "dryRun": True}, key="k-1")
    assert store.answers == {}


def test_two_keys_of_one_api_key_are_two_requests(store, queue, clock):
    assert post(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1")[0] == 200
    assert post(store, queue, clock, {"unitIds": [UNITS[3]]}, key="k-2")[0] == 200
    assert len(store.audit) == 2


def test_one_key_for_the_same_body_on_another_reservation_is_422(store, queue, clock):
    store.nodes["node-a"].reservations["res-2"] = reservation("res-2", reserved=(), released=())
    post(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1")
    store.nodes["node-a"].reservations["res-2"] = reservation("res-2")
    with pytest.raises(IdempotencyKeyReused):
        post(store, queue, clock, {"unitIds": [UNITS[0]]}, key="k-1", res="res-2")


@pytest.mark.parametrize("jitter", ["lowest", "highest"])
def test_lost_races_wait_a_growing_bounded_jittered_time(store, queue, clock, monkeypatch, jitter):
    # Full jitter: a wait is drawn from [0, bound]; pin the draw to either end.
    monkeypatch.setattr(
        retries.random, "uniform", lambda low, high: low if jitter == "lowest" else high
    )
    conflicting = Conflicting(clock)
    conflicting.nodes = store.nodes
    conflicting.losses = MAX_ATTEMPTS
    waits: list[float] = []
    with pytest.raises(Conflict):
        post(conflicting, queue, clock, {"unitIds": [UNITS[0]]}, sleep=waits.append)
    assert len(waits) == MAX_ATTEMPTS
    if jitter == "lowest":
        assert waits == [0] * MAX_ATTEMPTS
    else:
        assert waits == sorted(waits)  # longer after each loss
        assert len(set(waits)) > 1
        assert waits[0] > 0
        assert max(waits) <= 0.4
        assert sum(waits) <= 1.5


def test_a_listed_unit_shows_its_gpu_model_name(store, clock):
    partition = store.nodes["node-a"]
    partition.units[UNITS[0]] = replace(partition.units[UNITS[0]], gpu_model_name="H100 SXM")
    [view] = [u for u in list_units(BROKER, "node-a", store, NOW) if u.id == UNITS[0]]
    assert view.gpu_model_name == "H100 SXM"

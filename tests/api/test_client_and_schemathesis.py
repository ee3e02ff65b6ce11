"""The API as tools nobody here wrote use it, against the local stack (`make run` of the demo
fleet, its node agents running): first the sessions (README.md, docs/sessions.md) through the typed Python client
(clients/python), then schemathesis with each permission kind of key. One stack for both.

The client: answers are models, times datetimes, every error an exception named by its
code. Schemathesis: no server error, only documented statuses, content types and shapes,
and no valid request refused but the business refusals of ``schemathesis_refusals.json``."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from reservations_api_client.models import (
    CreateReservationRequest,
    NodeRequest,
    PlaceWorkloadRequest,
    UnitSpec,
    UnitsRequest,
)
from reservations_api_client.types import Unset
from reservations_client import (
    InvalidRequest,
    NotFound,
    Reservations,
    Unauthorized,
    UnitsUnavailable,
)
from tests.support.api_tools import (
    DOCUMENT,
    KEYS,
    LOOPBACK_HOOK,
    Tally,
    counted_checks,
    demo_stack,
    refusals,
)
from tests.support.e2e import REPORTS, TIMINGS
from tests.support.stack import Stack

pytestmark = pytest.mark.e2e
T = TypeVar("T")
A1, C3, N1 = "node-a1", "node-c3", "node-n1"
WAIT = 60  # seconds: a node agent stops a terminated VM and reports; a term starts


@pytest.fixture(scope="module")
def stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from demo_stack(tmp_path_factory.mktemp("api-tools"))


def as_key(stack: Stack, kind: str) -> Reservations:
    return Reservations(stack.api, KEYS[kind], timeout=60)


def eventually(read: Callable[[], T], done: Callable[[T], bool]) -> T:
    deadline = time.monotonic() + WAIT
    while not done(value := read()):
        assert time.monotonic() < deadline, f"not within {WAIT} s: {value!r}"
        time.sleep(0.5)
    return value


def test_the_demo_session_through_the_client(stack: Stack) -> None:
    """README, *A session with the demo keys*: units, who may not see them, a reclaim's dry
    run, the reclaim (repeatable with its key), a refused request."""
    broker = as_key(stack, "broker")
    units = broker.list_units(A1)
    assert [u.id for u in units] == sorted(u.id for u in units)
    with pytest.raises(Unauthorized) as nobody:
        Reservations(stack.api, "vl_nobody").list_units(A1)
    assert (nobody.value.status, nobody.value.code) == (401, "unauthorized")
    with pytest.raises(NotFound):
        Reservations(stack.api, "vl_local_only_stranger").list_units(A1)

    taken = ["0000:04:00.0", "0000:05:00.0", "0000:08:00.0"]
    dry = broker.reclaim(A1, "res-a-active", UnitsRequest(unit_ids=taken, dry_run=True))
    assert (dry.would_terminate, dry.would_skip) == (["vm-17", "vm-18"], ["vm-21"])
    body = UnitsRequest(unit_ids=taken, reason="lab needs them")
    done = broker.reclaim(A1, "res-a-active", body, idempotency_key="reclaim-client-1")
    assert (done.terminated, done.skipped) == (["vm-17", "vm-18"], ["vm-21"])
    assert done.released_unit_ids == ["0000:06:00.0", "0000:09:00.0"]
    assert isinstance(done.updated_at, datetime)
    again = broker.reclaim(A1, "res-a-active", body, idempotency_key="reclaim-client-1")
    assert again.to_dict() == done.to_dict()
    freed = eventually(lambda: {u.id: u.state for u in broker.list_units(A1)},
                       lambda s: all(s[u] == "free" for u in taken[:2]))  # fmt: skip
    assert freed["0000:06:00.0"] == "free"

    with pytest.raises(InvalidRequest) as refused:
        broker.list_reservations(A1, limit=101)
    assert refused.value.details[0]["field"] == "limit"
    assert refused.value.request_id


def test_the_lifecycle_session_through_the_client(stack: Stack) -> None:
    """docs/sessions.md, *The reservation lifecycle*: reserve (repeatable), a refusal with its details,
    reads and pages, the node and its workloads, a request id on an error."""
    owner, lab = as_key(stack, "owner"), Reservations(stack.api, "vl_local_only_lab")
    body = CreateReservationRequest(
        unit_ids=["0000:0c:00.0"], allowed_org_ids=["org-lab"],
        managing_org_ids=["org-broker"], ends_at=datetime(2034, 12, 31, tzinfo=UTC),
    )  # fmt: skip
    made = owner.create_reservation(A1, body, idempotency_key="lab-client-1")
    assert (made.status, made.released_unit_ids) == ("active", [])
    assert made.ends_at == datetime(2034, 12, 31, tzinfo=UTC)
    assert owner.create_reservation(A1, body, idempotency_key="lab-client-1").id == made.id
    with pytest.raises(UnitsUnavailable) as held:
        owner.create_reservation(A1, CreateReservationRequest(
            unit_ids=["0000:04:00.0"], allowed_org_ids=["org-lab"]))  # fmt: skip
    assert (held.value.status, held.value.details[0]["field"]) == (409, "unitIds[0]")

    assert lab.get_reservation(A1, "res-a-active").status == "active"
    first = owner.list_reservations(A1, limit=2)
    assert len(first.items) == 2
    assert first.next_cursor
    rest = owner.list_reservations(A1, limit=2, cursor=first.next_cursor)
    ids = [r.id for r in first.items + rest.items]
    assert ids == sorted(ids)
    assert made.id in ids
    assert not rest.next_cursor
    pending = owner.list_reservations(A1, status=["pending", "needs-review"])
    assert {r.status for r in pending.items} <= {"pending", "needs-review"}
    with pytest.raises(NotFound):
        Reservations(stack.api, "vl_local_only_stranger").list_reservations(A1)

    node = owner.get_node(A1)
    assert node.id == A1
    assert isinstance(node.created_at, datetime)
    assert len(owner.list_workloads(A1, limit=2).items) <= 2
    # The spot buyer's VMs on node-a1 ended with the reclaim above; its pods on node-b7 run.
    buyer = as_key(stack, "spot buyer")
    running = buyer.list_workloads("node-b7", state="running").items
    assert {(w.id, w.org_id) for w in running} == {("pod-3", "org-spotbuyer")}
    assert buyer.get_workload("node-b7", "pod-3").state == "running"
    with pytest.raises(NotFound):
        buyer.get_workload("node-b7", "pod-4")  # org-walkin's
    with pytest.raises(NotFound) as missing:
        lab.get_reservation(A1, "nope")
    assert missing.value.request_id


def test_lend_take_back_and_end_through_the_client(stack: Stack) -> None:
    """docs/sessions.md, node-c3: a reservation starting seconds ahead becomes active, lends both its
    units, takes one back (vm-31 terminated), and is cancelled; it stays readable."""
    owner, broker = as_key(stack, "owner"), as_key(stack, "broker")
    start = (datetime.now(UTC) + timedelta(seconds=5)).replace(microsecond=0)
    units = ["0000:21:00.0", "0000:22:00.0"]
    made = owner.create_reservation(C3, CreateReservationRequest(
        unit_ids=units, allowed_org_ids=["org-lab"], managing_org_ids=["org-broker"],
        starts_at=start))  # fmt: skip
    assert made.status == "pending"
    assert isinstance(made.starts_at, datetime)
    eventually(lambda: owner.get_reservation(C3, made.id).status, lambda s: s == "active")

    lent = broker.release(C3, made.id, UnitsRequest(unit_ids=units))
    assert lent.released_unit_ids == units
    taken = broker.reclaim(C3, made.id, UnitsRequest(unit_ids=units[:1]))
    assert (taken.released_unit_ids, taken.terminated, taken.skipped) == (
        units[1:], ["vm-31"], [],
    )  # fmt: skip
    eventually(lambda: {u.id: u.state for u in owner.list_units(C3)},
               lambda s: s[units[0]] == "free")  # fmt: skip
    cancelled = owner.cancel(C3, made.id)
    assert (cancelled.status, cancelled.released_unit_ids) == ("cancelled", [])
    assert owner.get_reservation(C3, made.id).status == "cancelled"
    freed = [u for u in owner.list_units(C3) if u.id in units]
    assert [isinstance(u.reservation_id, Unset) for u in freed] == [True, True]


def h100(unit_id: str) -> UnitSpec:
    return UnitSpec(
        id=unit_id, alloc_class="vfio-group", gpu_model_id="nvidia-h100-sxm5-80gb",
        sellable_gpus=1, sellable=True,
    )  # fmt: skip


def test_from_an_empty_node_through_the_client(stack: Stack) -> None:
    """docs/sessions.md, *From an empty stack*: register node-n1, reserve, lend, place (one refused),
    take back (its agent stops vm-1), end vm-2: every unit free."""
    operator, owner, broker = (as_key(stack, k) for k in ("operator", "owner", "broker"))
    units = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
    node = operator.put_node(N1, NodeRequest(owner_org_id="org-acme", topology_gen=1,
                                             units=[h100(u) for u in units]))  # fmt: skip
    assert (node.unit_ids, node.topology_gen) == (units, 1)
    made = owner.create_reservation(
        N1,
        CreateReservationRequest(
            unit_ids=units[:2], allowed_org_ids=["org-lab"], managing_org_ids=["org-broker"]
        ),
    )
    assert broker.release(N1, made.id, UnitsRequest(unit_ids=units[:1])).released_unit_ids == [
        units[0]
    ]

    def place(workload: str, tier: Any, org: str, unit: str) -> Any:
        return operator.place_workload(N1, PlaceWorkloadRequest(
            id=workload, kind="vm", tier=tier, org_id=org, unit_ids=[unit]))  # fmt: skip

    spot = place("vm-1", "spot", "org-spotbuyer", units[0])
    assert (spot.state, spot.unit_ids) == ("running", units[:1])
    assert isinstance(spot.created_at, datetime)
    place("vm-2", "on-demand", "org-walkin", units[2])
    with pytest.raises(UnitsUnavailable) as refused:
        place("vm-3", "spot", "org-spotbuyer", units[1])
    assert "0000:05:00.0" in refused.value.message

    reclaimed = broker.reclaim(N1, made.id, UnitsRequest(unit_ids=units[:1]))
    assert (reclaimed.released_unit_ids, reclaimed.terminated) == ([], ["vm-1"])
    eventually(lambda: {u.id: u.state for u in broker.list_units(N1)},
               lambda s: s[units[0]] == "free")  # fmt: skip
    operator.end_workload(N1, "vm-2")
    assert {u.state for u in owner.list_units(N1)} == {"free"}
    ended = owner.get_workload(N1, "vm-2")  # from the node's history, with its own use
    assert ended.state == "ended"
    assert isinstance(ended.used_from, datetime)
    assert isinstance(ended.used_to, datetime)
    assert ended.gpu_ms >= (ended.used_to - ended.used_from) // timedelta(milliseconds=1) > 0


def test_the_event_feeds_through_the_client(stack: Stack) -> None:
    """docs/sessions.md, *Events*: after the demo session's reclaim, the spot buyer reads both steps
    of its VMs' ends from its org's feed, the broker its reclaim from the node's."""
    buyer, broker = as_key(stack, "spot buyer"), as_key(stack, "broker")
    types = "workload.termination_requested,workload.terminated"
    page = eventually(lambda: buyer.events(types=types),
                      lambda p: {(e.type_, e.subject) for e in p.items} >= {
                          ("workload.terminated", "workloads/vm-17")})  # fmt: skip
    subjects = {(e.type_, e.subject) for e in page.items}
    assert ("workload.termination_requested", "workloads/vm-18") in subjects
    assert all(isinstance(e.time, datetime) for e in page.items)
    reclaims = broker.node_events(A1, types="reservation.reclaimed", limit=10).items
    assert "reservations/res-a-active" in {e.subject for e in reclaims}
    with pytest.raises(NotFound):
        Reservations(stack.api, "vl_local_only_stranger").node_events(A1)


# --- schemathesis -------------------------------------------------------------------------

EXAMPLES = int(os.environ.get("E2E_FUZZ_EXAMPLES", "5"))  # per operation; each sent per key
SCENARIOS = int(os.environ.get("E2E_FUZZ_SCENARIOS", "4"))  # stateful, per key
SETTINGS = settings(deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
TALLY = Tally()
LISTED = refusals()
CHECKS = counted_checks(TALLY, LISTED)
# A node of the fuzzer's own, 16 free units: what a create or a place is aimed at, so that
# a share succeeds and the stateful phase follows their links.
FUZZ_NODE = "node-fuzz"
MAKERS = {"createReservation", "placeWorkload"}


# The committed document; requests go to the stack's port (``send``). Valid data only (what
# a client sends): the document's examples and generated cases. A valid request may be
# answered 2xx, 401 or 404 (not permitted reads as unknown), 304 (a GET whose
# If-None-Match names the reservation's tag, or is *), or with a listed refusal.
schema = schemathesis.openapi.from_path(DOCUMENT, config=SchemathesisConfig.from_dict({
    "request-timeout": 60,
    "generation": {"mode": "positive"},
    "phases": {"coverage": {"enabled": False}},
    "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "304", "401", "404"]}},
}))  # fmt: skip


@pytest.fixture(scope="module")
def world(stack: Stack) -> dict[str, dict[str, list[str]]]:
    """The ids the fleet has by then (the sessions above added some), by node: its
    reservations, workloads and units, to aim cases at."""
    operator = as_key(stack, "operator")
    TALLY.started = time.monotonic()
    operator.put_node(FUZZ_NODE, NodeRequest(owner_org_id="org-acme", topology_gen=1, units=[
        h100(f"0000:{0x60 + i:02x}:00.0") for i in range(16)]))  # fmt: skip
    return {node: {
        "reservationId": ids(operator.list_reservations, node),
        "workloadId": ids(operator.list_workloads, node),
        "unitIds": ids(operator.list_units, node),
    } for node in (A1, "node-b7", C3, N1, FUZZ_NODE)}  # fmt: skip


def ids(read: Callable[[str], Any], node: str) -> list[str]:
    """The ids a list of the node gives; none where it is a 404 (one that can see none)."""
    try:
        answer = read(node)
    except NotFound:
        return []
    return [item.id for item in getattr(answer, "items", answer)]


def aim(case: Any, world: dict[str, dict[str, list[str]]]) -> None:
    """Two cases in three at a real node and its own ids (the same case aimed the same way
    every run); a create or a place at the fuzzer's node, from now on."""
    choose = random.Random(repr((case.operation.label, case.path_parameters, case.body)))
    parameters = case.path_parameters or {}
    makes = case.operation.definition.raw.get("operationId") in MAKERS
    if "nodeId" in parameters and choose.random() < 2 / 3:
        parameters["nodeId"] = node = FUZZ_NODE if makes else choose.choice(sorted(world))
        for name in ("reservationId", "workloadId"):
            if name in parameters and world[node][name]:
                parameters[name] = choose.choice(world[node][name])
        units = world[node]["unitIds"]
        if isinstance(case.body, dict) and isinstance(case.body.get("unitIds"), list) and units:
            case.body["unitIds"] = choose.sample(units, min(len(units), choose.randint(1, 2)))
        if makes and isinstance(case.body, dict):  # a term from now on, open-ended
            case.body.pop("startsAt", None)
            case.body.pop("endsAt", None)


def send(case: Any, stack: Stack, kind: str) -> Any:
    response = case.call(base_url=stack.api)
    if response.status_code == 503 and repeatable(case):
        # The contract's answer when the store did not answer in time (here: the emulator
        # on a loaded machine): retry after Retry-After, as the typed client does. Counted;
        # a second 503 fails the checks.
        TALLY.statuses[f"{case.method.upper()} {case.operation.path} 503, retried"] += 1
        time.sleep(float(response.headers.get("retry-after", ["1"])[0]))
        response = case.call(base_url=stack.api)
    TALLY.requests[kind] += 1
    TALLY.statuses[f"{case.method.upper()} {case.operation.path} {response.status_code}"] += 1
    return response


def repeatable(case: Any) -> bool:
    """Whether the contract says to send the case again after a 503: a read, a PUT or a
    DELETE as it was, a POST or PATCH with its Idempotency-Key."""
    keyed = any(k.lower() == "idempotency-key" for k in case.headers or {})
    return case.method.upper() in {"GET", "PUT", "DELETE"} or keyed


@schema.parametrize()
@settings(SETTINGS, max_examples=EXAMPLES)
def test_schemathesis_every_operation_with_each_kind_of_key(
    case: Any, stack: Stack, world: dict[str, dict[str, list[str]]]
) -> None:
    aim(case, world)
    for kind in KEYS:
        with_key(case, kind)
        case.validate_response(send(case, stack, kind), checks=CHECKS)


@pytest.mark.parametrize("kind", list(KEYS))
def test_schemathesis_stateful_over_the_links(
    stack: Stack, world: dict[str, dict[str, list[str]]], kind: str
) -> None:
    """Scenarios that follow the document's links (create -> get, release, reclaim, cancel;
    place -> get, end; ...), their first step aimed at a real node, with ``kind``'s key."""

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def step(self, input: Any) -> Any:
            if input.transition is None:  # a scenario's first step; later ones follow links
                aim(input.case, world)
            else:
                inferred = " (inferred)" if input.transition.is_inferred else ""
                TALLY.links[input.transition.id + inferred] += 1
            with_key(input.case, kind)
            return super().step(input)

        def call(self, case: Any, **kwargs: Any) -> Any:
            return send(case, stack, kind)

        def validate_response(self, response: Any, case: Any, *args: Any, **kwargs: Any) -> None:
            case.validate_response(response, checks=CHECKS)

    Workflow.run(settings=settings(SETTINGS, max_examples=SCENARIOS, stateful_step_count=6))


def with_key(case: Any, kind: str) -> None:
    """The case sent with ``kind``'s key; a webhook URL in its body on loopback."""
    if isinstance(case.body, dict) and "url" in case.body:
        case.body["url"] = LOOPBACK_HOOK
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    case.headers["Authorization"] = f"Bearer {KEYS[kind]}"


def test_schemathesis_counts_are_printed() -> None:
    """Runs last: what was sent, what each check passed, which refusals were seen."""
    REPORTS.append(TALLY.report())
    print("\n" + TALLY.report())
    TIMINGS["schemathesis (stateless and stateful, every key)"] = time.monotonic() - TALLY.started
    assert sum(TALLY.requests.values()) > 0
    assert set(TALLY.requests) == set(KEYS)

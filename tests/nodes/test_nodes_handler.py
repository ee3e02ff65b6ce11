"""PUT /v1/nodes/{nodeId} and POST .../reaffirm, in-process over moto: every rule."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack.api_events import get_event, list_event, list_units_event, node_event, reaffirm_event
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import invoke
from reservations.kernel.aws import clients
from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import state
from tests.support.bodies import comparable, unidentified
from tests.support.faults import on_call
from tests.support.paging import bounded_pages
from tests.support.ports import AllPorts as Ports
from tests.support.ports import real_ports
from tests.support.writes import put_node

pytestmark = pytest.mark.moto

OPERATOR = "Bearer vl_local_test_node_operator"
NODE_WRITERS = [
    {"key": "vl_local_test_node_operator", "orgId": "org-platform", "permissions": ["node.write"]},
    # node.write on a key that is not the operator's grants nothing.
    {"key": "vl_local_test_owner_nodes", "orgId": "org-acme", "permissions": ["node.write"]},
    {
        "key": "vl_local_test_op_reader",
        "orgId": "org-platform",
        "permissions": ["reservation.read"],
    },
]
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"
# A node update made in the test itself, through the use case (not the handler, which keeps
# its request in module state): a concurrent writer.
NODE_CALLER = Caller("key-other-op", "org-platform", frozenset({"node.write"}), True)


def ports() -> Ports:
    return real_ports(make_queue=lambda _node: "unused")


@pytest.fixture(scope="module")
def handlers() -> dict[str, ModuleType]:
    from devstack.functions import load_function

    names = ("put_node", "reaffirm", "list_units", "get_reservation", "list_reservations")
    return {name: load_function(name) for name in names}


@pytest.fixture
def node_env(aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the template gives PutNodeFunction: the queue prefix and the dead-letter ARN."""
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()


def spec(unit_id: str, **overrides: Any) -> dict[str, Any]:
    return f.unit(unit_id, **overrides)


def body(gen: int, units: list[dict[str, Any]], owner: str = "org-acme") -> dict[str, Any]:
    return {"ownerOrgId": owner, "topologyGen": gen, "units": units}


def fleet(
    reservations: list[dict[str, Any]] = (),  # type: ignore[assignment]
    workloads: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> dict[str, Any]:
    node = f.node("node-a", [spec(U4), spec(U5), spec(U6)], reservations, workloads)
    return f.fleet([node], extra_keys=NODE_WRITERS)


def put(handlers, node_id: str, document: Any, authorization: str | None = OPERATOR) -> Any:
    return invoke(handlers["put_node"], node_event(node_id, document, authorization))


def status_of(handlers, node_id: str, reservation_id: str) -> str:
    """The reservation's effective status, as a reader of the API sees it."""
    answer = invoke(
        handlers["get_reservation"],
        get_event(node_id, reservation_id, "Bearer vl_local_test_operator"),
    )
    assert answer.status == 200, answer.body
    return str(answer.body["status"])


# --- registering ---------------------------------------------------------------------------


def test_a_new_node_is_201_with_its_queue_and_the_units_listed(handlers, load_fleet, node_env, aws):
    load_fleet(fleet())
    result = put(handlers, "node-new", body(1, [spec("0000:0B:00.0"), spec(U4)]))
    assert result.status == 201
    assert result.headers["content-type"] == "application/json"
    answer = result.body
    assert set(answer) == {"id", "ownerOrgId", "topologyGen", "unitIds", "createdAt", "updatedAt"}
    assert answer["unitIds"] == [U4, "0000:0b:00.0"]  # sorted, lower-case
    assert (answer["id"], answer["ownerOrgId"], answer["topologyGen"]) == (
        "node-new",
        "org-acme",
        1,
    )
    assert answer["createdAt"] == answer["updatedAt"]
    queue_url = state.node_queue_url(aws, "node-new")
    assert queue_url.endswith(f"/{NODE_QUEUE_PREFIX}node-new.fifo")
    attributes = boto3.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["FifoQueue", "RedrivePolicy"]
    )["Attributes"]
    assert attributes["FifoQueue"] == "true"
    assert "SpotTerminationDeadLetterQueue" in attributes["RedrivePolicy"]
    listed = invoke(
        handlers["list_units"], list_units_event("node-new", "Bearer vl_local_test_operator")
    ).body
    assert [u["id"] for u in listed] == [U4, "0000:0b:00.0"]
    assert all(u["state"] == "free" and u["reservable"] for u in listed)
    [event] = state.events(aws, "node-new")
    assert (event["type"], event["subject"]) == ("node.registered", "nodes/node-new")
    assert event["data"]["actor"]["orgId"] == "org-platform"
    assert event["data"]["addedUnitIds"] == [U4, "0000:0b:00.0"]


def test_a_repeat_of_the_same_put_is_200_and_writes_nothing(handlers, load_fleet, node_env, aws):
    load_fleet(fleet())
    first = put(handlers, "node-new", body(1, [spec(U4)]))
    before = state.whole_table(aws)
    again = put(handlers, "node-new", body(1, [spec(U4)]))
    assert (first.status, again.status) == (201, 200)
    assert again.body == first.body
    assert state.whole_table(aws) == before


def test_put_ignores_an_idempotency_key_and_answers_as_without_one(
    handlers, load_fleet, node_env, aws
):
    """PUT is idempotent by itself: the header is neither checked nor stored, so a key
    reused with another body does not replay the first answer, and a malformed one is no
    400."""
    load_fleet(fleet())
    steps = [
        (body(1, [spec(U4)]), "put-1"),
        (body(2, [spec(U4), spec(U5)]), "put-1"),  # the same key, another request
        (body(2, [spec(U4), spec(U5)]), "put-1"),
        (body(3, [spec(U5)]), "x" * 300),  # longer than any Idempotency-Key may be
        (body(3, [spec(U5)]), "bad\u0001key"),
    ]

    def answers(node_id: str, keyed: bool) -> list[tuple[int, Any]]:
        seen = []
        for document, key in steps:
            event = node_event(node_id, document, OPERATOR)
            if keyed:
                event["headers"]["idempotency-key"] = key
            result = invoke(handlers["put_node"], event)
            seen.append((result.status, result.body.get("unitIds", result.body)))
        return seen

    with_key = answers("node-keyed", keyed=True)
    assert with_key == answers("node-plain", keyed=False)
    assert [status for status, _ in with_key] == [201, 200, 200, 200, 200]
    assert with_key[1][1] == [U4, U5]  # applied, not the first answer replayed
    assert not [i for i in state.whole_table(aws) if i["PK"].startswith("IDEMPOTENCY#")]


# --- who may: the one 404 ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("authorization", "node_id"),
    [
        ("Bearer vl_local_test_owner_nodes", "node-a"),  # node.write, but not the operator
        ("Bearer vl_local_test_op_reader", "node-a"),  # the operator, without node.write
        ("Bearer vl_local_test_operator", "node-a"),
        (OPERATOR, "node a"),  # malformed id
    ],
)
def test_anyone_but_an_operator_with_node_write_gets_the_one_404(
    handlers, load_fleet, node_env, aws, authorization, node_id
):
    load_fleet(fleet())
    unknown = invoke(
        handlers["list_units"], list_units_event("node-x", "Bearer vl_local_test_operator")
    )
    before = state.whole_table(aws)
    result = put(handlers, node_id, "{not json", authorization)  # 404 before the body's 400
    assert comparable(result) == comparable(unknown)
    assert state.whole_table(aws) == before


def test_no_key_is_401_before_anything(handlers, load_fleet, node_env):
    load_fleet(fleet())
    result = put(handlers, "node a", "{bad", None)
    assert result.status == 401
    assert result.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("document", "field"),
    [
        (body(1, [spec(U4)]) | {"topologygen": 1}, "topologygen"),
        (body(0, [spec(U4)]), "topologyGen"),
        (body(True, [spec(U4)]), "topologyGen"),  # type: ignore[arg-type]
        (body(1, []), "units"),
        (body(1, [spec(U4), spec(U4.upper())]), "units[1].id"),
        (body(1, [spec("04:00.0")]), "units[0].id"),
        (body(1, [spec(U4, sellable="yes")]), "units[0].sellable"),
        (body(1, [spec(U4, extra=1)]), "units[0].extra"),
        (body(1, [spec(U4)], owner="org acme"), "ownerOrgId"),
        (body(1, [spec(f"0000:{i // 256:02x}:{i % 32:02x}.{i % 8}") for i in range(257)]), "units"),
    ],
)
def test_a_bad_body_is_400_naming_the_field_and_writes_nothing(
    handlers, load_fleet, node_env, aws, document, field
):
    load_fleet(fleet())
    before = state.whole_table(aws)
    result = put(handlers, "node-a", document)
    assert result.status == 400
    assert result.body["code"] == "invalid_request"
    assert field in [d["field"] for d in result.body["details"]]
    assert state.whole_table(aws) == before


# --- updating ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gen", "units"),
    [
        (0 + 1, [spec(U4), spec(U5)]),  # equal generation, a unit fewer
        (1, [spec(U4), spec(U5), spec(U6, gpuModelName="H100 renamed")]),  # equal, renamed
    ],
)
def test_an_equal_generation_with_other_units_is_409_stale_topology(
    handlers, load_fleet, node_env, aws, gen, units
):
    load_fleet(fleet())
    before = state.whole_table(aws)
    result = put(handlers, "node-a", body(gen, units))
    assert result.status == 409
    assert result.body["code"] == "stale_topology"
    assert state.whole_table(aws) == before


def test_a_lower_generation_is_409_stale_topology(handlers, load_fleet, node_env, aws):
    document = fleet()
    document["nodes"][0]["topologyGen"] = 5
    load_fleet(document)
    result = put(handlers, "node-a", body(4, [spec(U4), spec(U5), spec(U6)]))
    assert (result.status, result.body["code"]) == (409, "stale_topology")
    assert "lower" in result.body["error"]


def test_the_same_units_at_a_higher_generation_and_a_new_owner_update_the_node(
    handlers, load_fleet, node_env, aws
):
    load_fleet(fleet([f.reservation("res-1", [U4])]))
    result = put(handlers, "node-a", body(2, [spec(U4), spec(U5), spec(U6)], owner="org-new"))
    assert result.status == 200
    assert (result.body["topologyGen"], result.body["ownerOrgId"]) == (2, "org-new")
    assert result.body["createdAt"] <= result.body["updatedAt"]
    assert status_of(handlers, "node-a", "res-1") == "active"
    node = state.item(aws, "node-a", "#NODE")
    assert (node["topologyGen"], node["ownerOrgId"]) == (2, "org-new")


def test_removing_a_claimed_unit_is_409_units_unavailable_naming_it(
    handlers, load_fleet, node_env, aws
):
    load_fleet(fleet(workloads=[f.workload("vm-1", [U5]), f.workload("vm-2", [U6])]))
    before = state.whole_table(aws)
    result = put(handlers, "node-a", body(2, [spec(U4)]))
    assert result.status == 409
    assert result.body["code"] == "units_unavailable"
    assert [d["problem"] for d in result.body["details"]] == [
        f"{U5}: unit would be removed but is claimed by vm:vm-1",
        f"{U6}: unit would be removed but is claimed by vm:vm-2",
    ]
    assert state.whole_table(aws) == before


def test_a_topology_change_puts_only_live_reservations_on_changed_units_under_review(
    handlers, load_fleet, node_env, aws
):
    load_fleet(
        fleet(
            [
                f.reservation("res-gone", [U4], releasedUnitIds=[U4]),  # its unit is removed
                f.reservation("res-model", [U5], status="pending", startsAt=f.days(3)),
                f.reservation("res-named", [U6], managingOrgIds=["org-x"]),  # only a new name
                f.reservation("res-cancelled", [U4], status="cancelled"),
            ]
        )
    )
    units = [
        spec(U5, gpuModelId="nvidia-a100-80gb"),
        spec(U6, gpuModelName="NVIDIA H100 (renamed)"),
        spec("0000:07:00.0"),
    ]
    reservations = ("res-gone", "res-model", "res-named", "res-cancelled")
    stored = {r: state.reservation(aws, "node-a", r) for r in reservations}
    result = put(handlers, "node-a", body(2, units))
    assert result.status == 200
    assert result.body["unitIds"] == [U5, U6, "0000:07:00.0"]
    assert {r: status_of(handlers, "node-a", r) for r in reservations} == {
        "res-gone": "needs-review",
        "res-model": "needs-review",
        "res-named": "active",
        "res-cancelled": "cancelled",
    }
    # Derived from the node's generations: no reservation item is written.
    assert {r: state.reservation(aws, "node-a", r) for r in reservations} == stored
    node = state.item(aws, "node-a", "#NODE")
    assert node["unitsChangedAtGen"] == {U5: 2, U6: 0, "0000:07:00.0": 2}
    assert state.item(aws, "node-a", "UNIT#" + U4) is None
    assert state.unit(aws, "node-a", U5)["gpuModelId"] == "nvidia-a100-80gb"
    listed = invoke(
        handlers["list_units"], list_units_event("node-a", "Bearer vl_local_test_operator")
    )
    governed = {u["id"]: (u.get("reservationId"), u.get("released")) for u in listed.body}
    assert governed[U5] == ("res-model", False)  # under review: withheld from everyone
    [event] = state.events(aws, "node-a", event_type="node.updated")
    assert (event["data"]["removedUnitIds"], event["data"]["changedUnitIds"]) == ([U4], [U5])
    assert event["data"]["reviewedReservationCount"] == 2


def test_a_units_ended_reservations_stay_ended_and_out_of_the_write(
    handlers, load_fleet, node_env, aws
):
    """A lab every three days for most of a year on 04 (stored active, every term over,
    within the history's retention): a new model on 04 reviews the live one only; the write
    stays within one transaction."""
    weekly = [
        f.reservation(f"res-w{n:03}", [U4], startsAt=f.days(-3 * (n + 2)), endsAt=f.days(-3 * (n + 1)))
        for n in range(104)
    ]  # fmt: skip
    load_fleet(fleet([*weekly, f.reservation("res-live", [U4])]))
    result = put(
        handlers, "node-a", body(2, [spec(U4, gpuModelId="nvidia-a100"), spec(U5), spec(U6)])
    )
    assert result.status == 200, result.body
    assert status_of(handlers, "node-a", "res-live") == "needs-review"
    assert {status_of(handlers, "node-a", r["id"]) for r in weekly} == {"expired"}
    listed = invoke(
        handlers["list_units"], list_units_event("node-a", "Bearer vl_local_test_operator")
    )
    assert {u["id"]: u.get("reservationId") for u in listed.body}[U4] == "res-live"


def test_a_changed_claimed_unit_keeps_its_claim(handlers, load_fleet, node_env, aws):
    load_fleet(fleet(workloads=[f.workload("vm-1", [U5])]))
    units = [spec(U4), spec(U5, sellable=False, notSellableReason="fan failure"), spec(U6)]
    assert put(handlers, "node-a", body(2, units)).status == 200
    stored = state.unit(aws, "node-a", U5)
    assert (stored["claimedBy"], stored["sellable"]) == ("vm:vm-1", False)


def test_a_node_loaded_without_a_queue_gets_one_on_its_next_update(
    handlers, load_fleet, node_env, aws
):
    load_fleet(fleet())
    aws.update_item(
        TableName=state.TABLE,
        Key={"PK": {"S": "NODE#node-a"}, "SK": {"S": "#NODE"}},
        UpdateExpression="REMOVE queueUrl",
    )
    assert put(handlers, "node-a", body(1, [spec(U4), spec(U5), spec(U6)])).status == 200
    assert state.node_queue_url(aws, "node-a").endswith(f"{NODE_QUEUE_PREFIX}node-a.fifo")


# --- re-affirm -----------------------------------------------------------------------------


def reaffirm(handlers, res: str, document: Any = None, key: str | None = None, auth=OPERATOR):
    return invoke(handlers["reaffirm"], reaffirm_event("node-a", res, document, auth, key))


def review_fleet(**overrides: Any) -> dict[str, Any]:
    return fleet(
        [
            f.reservation(
                "res-1", [U4, U5], status="needs-review", releasedUnitIds=[U4], **overrides
            ),
            f.reservation("res-live", [U6]),
        ]
    )


def test_reaffirm_returns_the_reservation_active_on_the_nodes_generation(
    handlers, load_fleet, node_env, aws
):
    document = review_fleet(topologyGen=1)
    document["nodes"][0]["topologyGen"] = 4
    load_fleet(document)
    result = reaffirm(handlers, "res-1", {"reason": "same GPUs, re-seated"})
    assert result.status == 200
    answer = result.body
    assert (answer["status"], answer["topologyGen"], answer["releasedUnitIds"]) == (
        "active",
        4,
        [],
    )
    stored = state.reservation(aws, "node-a", "res-1")
    assert (stored["status"], stored["topologyGen"], stored["releasedUnitIds"]) == (
        "active",
        4,
        [],
    )
    [event] = state.reservation_events(aws, "node-a", "res-1")
    assert (event["type"], event["data"]["reason"]) == (
        "reservation.reaffirmed",
        "same GPUs, re-seated",
    )


def test_reaffirm_before_the_term_starts_stores_pending(handlers, load_fleet, node_env, aws):
    load_fleet(review_fleet(startsAt=f.days(2), endsAt=f.days(9)))
    result = reaffirm(handlers, "res-1", "")
    assert (result.status, result.body["status"]) == (200, "pending")
    assert state.reservation(aws, "node-a", "res-1")["status"] == "pending"


def test_reaffirm_of_a_reservation_not_in_review_is_409_and_kept(
    handlers, load_fleet, node_env, aws
):
    load_fleet(review_fleet())
    first = reaffirm(handlers, "res-live", None, key="k-1")
    assert (first.status, first.body["code"]) == (409, "reservation_not_in_review")
    assert "active" in first.body["error"]
    again = reaffirm(handlers, "res-live", None, key="k-1")
    assert again.body_text == first.body_text


def test_reaffirm_with_a_unit_gone_or_not_reservable_is_422_naming_each(
    handlers, load_fleet, node_env, aws
):
    load_fleet(review_fleet())
    units = [spec(U4, allocClass="mig"), spec(U6)]  # U5 gone, U4 of a class never reservable
    assert put(handlers, "node-a", body(2, units)).status == 200
    result = reaffirm(handlers, "res-1")
    assert (result.status, result.body["code"]) == (422, "units_not_reservable")
    assert [d["problem"] for d in result.body["details"]] == [
        f"{U4}: allocation class mig is not reservable",
        f"{U5}: unit is not on this node",
    ]
    assert state.reservation(aws, "node-a", "res-1")["status"] == "needs-review"


@pytest.mark.parametrize(
    ("authorization", "res"),
    [
        ("Bearer vl_local_test_owner_nodes", "res-1"),
        ("Bearer vl_local_test_operator", "res-1"),  # operator without node.write
        (OPERATOR, "res-unknown"),
        (OPERATOR, "res/1"),
    ],
)
def test_reaffirm_answers_the_one_404(handlers, load_fleet, node_env, aws, authorization, res):
    load_fleet(review_fleet())
    unknown = invoke(
        handlers["list_units"], list_units_event("node-x", "Bearer vl_local_test_operator")
    )
    result = reaffirm(handlers, res, {"reason": "x"}, auth=authorization)
    assert comparable(result) == comparable(unknown)
    assert state.reservation(aws, "node-a", "res-1")["status"] == "needs-review"


def test_reaffirm_body_is_strict_and_checked_before_the_reservation(handlers, load_fleet, node_env):
    load_fleet(review_fleet())
    result = reaffirm(handlers, "res-unknown", {"reasn": "typo"})
    assert (result.status, result.body["details"][0]["field"]) == (400, "reasn")


def test_a_keyed_reaffirm_is_replayed_byte_for_byte_and_a_reuse_is_422(
    handlers, load_fleet, node_env, aws
):
    load_fleet(review_fleet())
    first = reaffirm(handlers, "res-1", {"reason": "ok"}, key="k-2")
    again = reaffirm(handlers, "res-1", {"reason": "ok"}, key="k-2")
    assert (first.status, again.status) == (200, 200)
    assert again.body_text == first.body_text
    assert len(state.reservation_events(aws, "node-a", "res-1")) == 1
    reused = reaffirm(handlers, "res-1", {"reason": "other"}, key="k-2")
    assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")


# --- what can go wrong on the way ----------------------------------------------------------


def test_sqs_unreachable_to_make_the_queue_is_a_503_with_nothing_written(
    handlers, load_fleet, node_env, aws
):
    from botocore.exceptions import EndpointConnectionError

    from reservations.kernel.aws import clients as function_clients
    from tests.support.faults import on_call

    load_fleet(fleet())
    before = state.whole_table(aws)

    def unreachable(_params: dict[str, Any]) -> None:
        raise EndpointConnectionError(endpoint_url="https://sqs.test")

    with on_call(function_clients.sqs(), "CreateQueue", before=unreachable):
        result = put(handlers, "node-new", body(1, [spec(U4)]))
    assert (result.status, unidentified(result.body)) == (  # an outage: the contract's 5xx, retry
        503,
        {"error": "the service could not answer in time; try again", "code": "internal"},
    )
    assert state.whole_table(aws) == before  # no node without its queue
    assert put(handlers, "node-new", body(1, [spec(U4)])).status == 201  # the retry makes both


def test_a_function_without_its_queue_settings_registers_nothing(
    handlers, load_fleet, node_env, aws, monkeypatch
):
    load_fleet(fleet())
    monkeypatch.delenv("NODE_DEAD_LETTER_QUEUE_ARN")
    clients.reset()
    before = state.whole_table(aws)
    result = put(handlers, "node-new", body(1, [spec(U4)]))
    assert (result.status, result.body["code"]) == (500, "internal")
    assert "NODE_DEAD_LETTER_QUEUE_ARN" not in result.body_text  # no internal names
    assert state.whole_table(aws) == before
    # An update of a node that has its queue needs neither setting.
    assert put(handlers, "node-a", body(2, [spec(U4), spec(U5), spec(U6)])).status == 200


# --- one write, whole or nothing --------------------------------------------------------


def many(count: int, bus: int = 0x10) -> list[str]:
    """``count`` unit ids, 32 to a bus from ``bus`` on."""
    return [f"0000:{bus + i // 32:02x}:{i % 32:02x}.0" for i in range(count)]


def booked(node_id: str, ids: list[str], terms: int = 3) -> dict[str, Any]:
    """A node whose every unit is sold for ``terms`` weeks ahead, a week at a time."""
    reservations = [
        f.reservation(f"res-{n:02}-{week}", [unit_id], status="pending",
                      startsAt=f.days(7 * week + 1), endsAt=f.days(7 * week + 8))
        for n, unit_id in enumerate(ids)
        for week in range(terms)
    ]  # fmt: skip
    return f.fleet([f.node(node_id, [spec(u) for u in ids], reservations)], NODE_WRITERS)


@contextmanager
def transactions(before: Callable[[dict[str, Any]], None] | None = None) -> Iterator[list[int]]:
    """The number of actions of each TransactWriteItems the functions send; ``before`` runs
    first (between a call's read and its write)."""
    sizes: list[int] = []

    def seen(params: dict[str, Any]) -> None:
        if before is not None:
            before(params)
        sizes.append(len(params["TransactItems"]))

    with on_call(clients.dynamodb(), "TransactWriteItems", before=seen):
        yield sizes


def reservation_items(dynamodb: Any, node_id: str) -> list[dict[str, Any]]:
    return [i for i in state.whole_table(dynamodb) if i["SK"].startswith("RES#")
            and i["PK"] == f"NODE#{node_id}"]  # fmt: skip


def listed_statuses(handlers, node_id: str) -> dict[str, str]:
    """Every reservation's effective status, through the list's pages."""
    statuses: dict[str, str] = {}
    query: dict[str, str] = {"limit": "100"}
    for _ in bounded_pages():
        event = list_event(node_id, "Bearer vl_local_test_operator", query)
        page = invoke(handlers["list_reservations"], event).body
        statuses |= {r["id"]: r["status"] for r in page["items"]}
        if "nextCursor" not in page:
            break
        query = {"limit": "100", "cursor": page["nextCursor"]}
    return statuses


def test_64_units_sold_192_times_change_in_one_transaction_that_writes_no_reservation(
    handlers, load_fleet, node_env, aws
):
    ids = many(64)
    load_fleet(booked("node-h", ids))
    stored = reservation_items(aws, "node-h")
    with transactions() as sizes:
        result = put(handlers, "node-h", body(2, [spec(u, gpuModelId="a100") for u in ids]))
    assert result.status == 200, result.body
    assert sizes == [67]  # the node, its list access, its 64 units, its one event
    assert reservation_items(aws, "node-h") == stored
    # Every reader sees all 192 under review from this write on (a list of two pages).
    assert set(listed_statuses(handlers, "node-h").values()) == {"needs-review"}
    [update] = state.events(aws, "node-h", event_type="node.updated")
    assert update["data"]["reviewedReservationCount"] == 192


@pytest.mark.parametrize(
    ("status", "reads"),
    [
        # Live statuses: the node's partition, each page's Query up to the access item.
        ("pending,active,needs-review", [("dynamodb", "Query")]),
        # No filter: the list index (present and history), a bounded window a page; a page
        # whose window stops before the access item reads it on its own (never the last).
        ("", [("dynamodb", "Query"), ("dynamodb", "GetItem")]),
    ],
)
def test_every_list_page_after_an_update_reads_the_review_with_the_access_item(
    handlers, load_fleet, node_env, aws, sent_requests, status, reads
):
    """The update writes the units' generations onto the node's list access item too, in
    its one transaction; each page reads that item, never the node item, and a later page
    shows the review as the first does."""
    ids = many(64)
    load_fleet(booked("node-h", ids))
    assert put(handlers, "node-h", body(2, [spec(u, gpuModelId="a100") for u in ids])).status == 200
    access, node = state.item(aws, "node-h", "~ACCESS"), state.item(aws, "node-h", "#NODE")
    assert access["unitsChangedAtGen"] == node["unitsChangedAtGen"] == {u: 2 for u in ids}
    query: dict[str, str] = {"limit": "50", "status": status}
    reader = "Bearer vl_local_test_operator"
    invoke(handlers["list_reservations"], list_event("node-h", reader, query))  # the key cached
    statuses: list[str] = []
    for _ in bounded_pages():
        sent_requests.clear()
        page = invoke(handlers["list_reservations"], list_event("node-h", reader, query)).body
        last = "nextCursor" not in page
        assert sent_requests.sent in ([("dynamodb", "Query")], reads)
        assert not last or sent_requests.sent == [("dynamodb", "Query")]
        statuses += [r["status"] for r in page["items"]]
        if last:
            break
        query = {"limit": "50", "status": status, "cursor": page["nextCursor"]}
    assert len(statuses) == 192
    assert set(statuses) == {"needs-review"}


def test_65_units_are_a_400_naming_units(handlers, load_fleet, node_env, aws):
    load_fleet(fleet())
    before = state.whole_table(aws)
    result = put(handlers, "node-new", body(1, [spec(u) for u in many(65)]))
    assert (result.status, result.body["details"][0]["field"]) == (400, "units")
    assert state.whole_table(aws) == before
    assert put(handlers, "node-new", body(1, [spec(u) for u in many(64)])).status == 201


def test_the_largest_update_replaces_every_unit_in_one_transaction_of_100_actions(
    handlers, load_fleet, node_env, aws
):
    """64 units out, 64 in: the node, its list access, 64 puts and its event, and as
    many of the 64 deletes as fit (33). The 31 left are no unit of the node for any call,
    and the next update deletes them."""
    old, new = many(64), many(64, bus=0x40)
    node = f.node("node-h", [spec(u) for u in old], [f.reservation("res-old", old[-1:])])
    load_fleet(f.fleet([node], NODE_WRITERS))
    with transactions() as sizes:
        assert put(handlers, "node-h", body(2, [spec(u) for u in new])).status == 200
    assert sizes == [100]
    units = invoke(
        handlers["list_units"], list_units_event("node-h", "Bearer vl_local_test_operator")
    )
    assert [u["id"] for u in units.body] == new
    assert status_of(handlers, "node-h", "res-old") == "needs-review"  # its unit is gone
    unit_items = {i["SK"] for i in state.whole_table(aws) if i["SK"].startswith("UNIT#")}
    assert unit_items == {f"UNIT#{u}" for u in new + old[33:]}
    # Re-sending the stored generation's units changes nothing.
    before = state.whole_table(aws)
    assert put(handlers, "node-h", body(2, [spec(u) for u in new])).status == 200
    assert state.whole_table(aws) == before
    # One of the old ones comes back (at generation 3): the rest are deleted.
    with transactions() as sizes:
        assert (
            put(handlers, "node-h", body(3, [spec(u) for u in [*new[1:], old[-1]]])).status == 200
        )
    # The node, its access, the put of 11:1f, the event, the delete of 40:00, 30 left over.
    assert sizes == [1 + 1 + 1 + 1 + 1 + 30]
    unit_items = {i["SK"] for i in state.whole_table(aws) if i["SK"].startswith("UNIT#")}
    assert unit_items == {f"UNIT#{u}" for u in [*new[1:], old[-1]]}
    assert status_of(handlers, "node-h", "res-old") == "needs-review"  # back, but changed at 3


def test_an_update_refused_on_a_unit_claimed_since_its_read_changes_nothing(
    handlers, load_fleet, node_env, aws
):
    """It removes 00 and changes the other 63 units (256 reservations under review); the
    scheduler claims 00 between its read and its write: 409, and nothing of it is written."""
    ids = many(64)
    load_fleet(booked("node-h", ids, terms=4))
    after_placement: list[Any] = []

    def scheduler_claims_the_removed_unit(params: dict[str, Any]) -> None:
        if not after_placement:
            state.place_spot_workload(aws, "node-h", "vm-late", ids[:1])
            after_placement.append(state.whole_table(aws))

    with transactions(scheduler_claims_the_removed_unit):
        result = put(handlers, "node-h", body(2, [spec(u, gpuModelId="a100") for u in ids[1:]]))
    assert (result.status, result.body["code"]) == (409, "units_unavailable")
    assert state.whole_table(aws) == after_placement[0]


def test_a_unit_claimed_since_the_read_is_never_removed_even_when_its_delete_does_not_fit(
    handlers, load_fleet, node_env, aws
):
    """All 64 replaced: the deletes of the last 31 do not fit, so only the node's count of
    placements tells the update that 00:1f... was claimed after its read."""
    old, new = many(64), many(64, bus=0x40)
    load_fleet(f.fleet([f.node("node-h", [spec(u) for u in old])], NODE_WRITERS))
    claimed = old[-1]
    placed: list[bool] = []

    def scheduler_claims_a_unit(params: dict[str, Any]) -> None:
        if not placed:
            placed.append(True)
            state.place_spot_workload(aws, "node-h", "vm-late", [claimed])

    with transactions(scheduler_claims_a_unit) as sizes:
        result = put(handlers, "node-h", body(2, [spec(u) for u in new]))
    assert (result.status, result.body["code"]) == (409, "units_unavailable")
    assert claimed in result.body["error"]
    assert sizes == [100]  # the one write tried, and refused; the retry read the claim
    assert state.item(aws, "node-h", "#NODE")["topologyGen"] == 1
    assert state.unit(aws, "node-h", claimed)["claimedBy"] == "vm:vm-late"


def test_a_superseded_update_changes_nothing(handlers, load_fleet, node_env, aws):
    """Generation 2 (every unit on a new model, 192 reservations under review) reads the
    node; generation 3 commits before 2 writes: 2 is stale and writes nothing. Re-sending
    generation 3's units is a 200 that changes nothing."""
    ids = many(64)
    load_fleet(booked("node-h", ids))
    stored = reservation_items(aws, "node-h")
    newer = body(3, [spec(u, gpuModelId="b200") for u in ids])
    committed: list[Any] = []

    def generation_3_commits_first(params: dict[str, Any]) -> None:
        if "ClientRequestToken" in params and not committed:  # generation 2's own write
            committed.append(None)
            answer = put_node(NODE_CALLER, "node-h", RawBody(json.dumps(newer)), ports())
            assert answer.status == 200
            committed.append(state.whole_table(aws))

    with transactions(generation_3_commits_first):
        result = put(handlers, "node-h", body(2, [spec(u, gpuModelId="a100") for u in ids]))
    assert (result.status, result.body["code"]) == (409, "stale_topology")
    assert state.whole_table(aws) == committed[1]
    assert reservation_items(aws, "node-h") == stored
    assert {state.unit(aws, "node-h", u)["gpuModelId"] for u in ids} == {"b200"}
    assert len(state.events(aws, "node-h")) == 1
    assert put(handlers, "node-h", newer).status == 200
    assert state.whole_table(aws) == committed[1]

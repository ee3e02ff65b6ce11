"""PUT /v1/nodes/{nodeId} and POST .../reaffirm, in-process over moto: every rule."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack.fleets import NODE_QUEUE_PREFIX
from reservations.dal import clients
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support import fleets as f
from tests.support import state
from tests.support.faults import on_call
from tests.support.lambdas import invoke, list_units_event, node_event, reaffirm_event

OPERATOR = "Bearer vl_test_node_operator"
NODE_WRITERS = [
    {"key": "vl_test_node_operator", "orgId": "org-platform", "permissions": ["node.write"]},
    # node.write on a key that is not the operator's grants nothing.
    {"key": "vl_test_owner_nodes", "orgId": "org-acme", "permissions": ["node.write"]},
    {"key": "vl_test_op_reader", "orgId": "org-platform", "permissions": ["reservation.read"]},
]
U4, U5, U6 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0"


@pytest.fixture(scope="module")
def handlers() -> dict[str, ModuleType]:
    from tests.support.lambdas import load_function

    return {name: load_function(name) for name in ("put_node", "reaffirm", "list_units")}


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
        handlers["list_units"], list_units_event("node-new", "Bearer vl_test_operator")
    ).body
    assert [u["id"] for u in listed] == [U4, "0000:0b:00.0"]
    assert all(u["state"] == "free" and u["reservable"] for u in listed)
    [audit] = state.audit_records_of(aws, "AUDIT#node-new")
    assert audit["action"] == "register-node"
    assert audit["callerOrgId"] == "org-platform"


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
        ("Bearer vl_test_owner_nodes", "node-a"),  # node.write, but not the operator
        ("Bearer vl_test_op_reader", "node-a"),  # the operator, without node.write
        ("Bearer vl_test_operator", "node-a"),
        (OPERATOR, "node a"),  # malformed id
    ],
)
def test_anyone_but_an_operator_with_node_write_gets_the_one_404(
    handlers, load_fleet, node_env, aws, authorization, node_id
):
    load_fleet(fleet())
    unknown = invoke(handlers["list_units"], list_units_event("node-x", "Bearer vl_test_operator"))
    before = state.whole_table(aws)
    result = put(handlers, node_id, "{not json", authorization)  # 404 before the body's 400
    assert (result.status, result.headers, result.body_text) == (
        unknown.status,
        unknown.headers,
        unknown.body_text,
    )
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
    assert state.reservation(aws, "node-a", "res-1")["status"] == "active"
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
    result = put(handlers, "node-a", body(2, units))
    assert result.status == 200
    assert result.body["unitIds"] == [U5, U6, "0000:07:00.0"]
    statuses = {r: state.reservation(aws, "node-a", r)["status"] for r in
                ("res-gone", "res-model", "res-named", "res-cancelled")}  # fmt: skip
    assert statuses == {
        "res-gone": "needs-review",
        "res-model": "needs-review",
        "res-named": "active",
        "res-cancelled": "cancelled",
    }
    assert state.item(aws, "node-a", "UNIT#" + U4) is None
    assert state.unit(aws, "node-a", U5)["gpuModelId"] == "nvidia-a100-80gb"
    listed = invoke(handlers["list_units"], list_units_event("node-a", "Bearer vl_test_operator"))
    governed = {u["id"]: (u.get("reservationId"), u.get("released")) for u in listed.body}
    assert governed[U5] == ("res-model", False)  # under review: withheld from everyone
    [audit] = state.audit_records_of(aws, "AUDIT#node-a")
    assert audit["reservationsToReview"] == ["res-gone", "res-model"]
    assert audit["unitsRemoved"] == [U4]


def test_a_units_ended_reservations_stay_ended_and_out_of_the_write(
    handlers, load_fleet, node_env, aws
):
    """A weekly lab for two years on 04 (stored active, every term over): a new model on 04
    reviews the live one only; the write stays within one transaction."""
    weekly = [
        f.reservation(f"res-w{n:03}", [U4], startsAt=f.days(-7 * (n + 2)), endsAt=f.days(-7 * (n + 1)))
        for n in range(104)
    ]  # fmt: skip
    load_fleet(fleet([*weekly, f.reservation("res-live", [U4])]))
    result = put(
        handlers, "node-a", body(2, [spec(U4, gpuModelId="nvidia-a100"), spec(U5), spec(U6)])
    )
    assert result.status == 200, result.body
    assert state.reservation(aws, "node-a", "res-live")["status"] == "needs-review"
    assert {state.reservation(aws, "node-a", r["id"])["status"] for r in weekly} == {"active"}
    listed = invoke(handlers["list_units"], list_units_event("node-a", "Bearer vl_test_operator"))
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
    [audit] = state.audit_records(aws, "node-a", "res-1")
    assert (audit["action"], audit["reason"]) == ("reaffirm", "same GPUs, re-seated")


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
        ("Bearer vl_test_owner_nodes", "res-1"),
        ("Bearer vl_test_operator", "res-1"),  # operator without node.write
        (OPERATOR, "res-unknown"),
        (OPERATOR, "res/1"),
    ],
)
def test_reaffirm_answers_the_one_404(handlers, load_fleet, node_env, aws, authorization, res):
    load_fleet(review_fleet())
    unknown = invoke(handlers["list_units"], list_units_event("node-x", "Bearer vl_test_operator"))
    result = reaffirm(handlers, res, {"reason": "x"}, auth=authorization)
    assert (result.status, result.headers, result.body_text) == (
        unknown.status,
        unknown.headers,
        unknown.body_text,
    )
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
    assert len(state.audit_records(aws, "node-a", "res-1")) == 1
    reused = reaffirm(handlers, "res-1", {"reason": "other"}, key="k-2")
    assert (reused.status, reused.body["code"]) == (422, "idempotency_key_reused")


def test_a_node_of_256_units_registers_and_changes_in_several_transactions(
    handlers, load_fleet, node_env, aws, sent_requests
):
    load_fleet(fleet())
    ids = [f"0000:{i // 16:02x}:{i % 16:02x}.0" for i in range(256)]
    sent_requests.clear()
    assert put(handlers, "node-big", body(1, [spec(u) for u in ids])).status == 201
    assert sent_requests.by_service("dynamodb")["TransactWriteItems"] == 3  # 100 actions each
    changed = [spec(u, gpuModelId="a100") for u in ids[:200]] + [spec(u) for u in ids[200:]]
    assert put(handlers, "node-big", body(2, changed)).status == 200
    listed = invoke(handlers["list_units"], list_units_event("node-big", "Bearer vl_test_operator"))
    models = [u["gpuModelId"] for u in listed.body]
    assert (len(models), models.count("a100")) == (256, 200)
    node = state.item(aws, "node-big", "#NODE")
    assert (node["topologyGen"], node["version"]) == (2, 2)


# --- what can go wrong on the way ----------------------------------------------------------


def test_sqs_unreachable_to_make_the_queue_is_a_503_with_nothing_written(
    handlers, load_fleet, node_env, aws
):
    from botocore.exceptions import EndpointConnectionError

    from reservations.dal import clients as function_clients
    from tests.support.faults import on_call

    load_fleet(fleet())
    before = state.whole_table(aws)

    def unreachable(_params: dict[str, Any]) -> None:
        raise EndpointConnectionError(endpoint_url="https://sqs.test")

    with on_call(function_clients.sqs(), "CreateQueue", before=unreachable):
        result = put(handlers, "node-new", body(1, [spec(U4)]))
    assert (result.status, result.body) == (  # an outage: the contract's 5xx, retry
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


# --- more than one transaction holds -------------------------------------------------------


def many(count: int) -> list[str]:
    return [f"0000:{i // 32 + 0x10:02x}:{i % 32:02x}.{0}" for i in range(count)]


def test_removing_most_of_a_large_node_is_one_update(handlers, load_fleet, node_env, aws):
    load_fleet(fleet())
    ids = many(200)
    assert put(handlers, "node-big", body(1, [spec(u) for u in ids])).status == 201
    result = put(handlers, "node-big", body(2, [spec(u) for u in ids[:3]]))
    assert (result.status, result.body["unitIds"]) == (200, ids[:3])
    listed = invoke(handlers["list_units"], list_units_event("node-big", "Bearer vl_test_operator"))
    assert [u["id"] for u in listed.body] == ids[:3]
    update = [a for a in state.audit_records_of(aws, "AUDIT#node-big") if a["topologyGen"] == 2]
    assert len(update) == 1
    assert len(update[0]["unitsRemoved"]) == 197


def test_reviews_beyond_one_transaction_all_land(handlers, load_fleet, node_env, aws):
    ids = many(120)
    reservations = [f.reservation(f"res-{n:03}", [u]) for n, u in enumerate(ids)]
    node = f.node("node-r", [spec(u) for u in ids], reservations)
    load_fleet(f.fleet([node], extra_keys=NODE_WRITERS))
    result = put(handlers, "node-r", body(2, [spec(u) for u in ids[:3]]))
    assert result.status == 200, result.body
    statuses = {state.reservation(aws, "node-r", r["id"])["status"] for r in reservations[3:]}
    assert statuses == {"needs-review"}
    assert state.reservation(aws, "node-r", "res-000")["status"] == "active"


def test_an_update_of_several_transactions_that_loses_its_last_one_completes_on_its_retry(
    handlers, load_fleet, node_env, aws
):
    """The unit puts that did not fit land first; a concurrent write then fails the last
    transaction (the generation, the reviews, the audit). The retry reads again and
    finishes: every unit on the new model, the review made, one audit record."""
    ids = many(150)
    node = f.node("node-s", [spec(u) for u in ids], [f.reservation("res-live", ids[:1])])
    load_fleet(f.fleet([node], extra_keys=NODE_WRITERS))
    raw = boto3.client("dynamodb")
    finals = []

    def a_release_commits_first(params: dict[str, Any]) -> None:
        if "ClientRequestToken" in params:  # the last transaction
            finals.append(params)
            if len(finals) == 1:
                raw.update_item(
                    TableName=state.TABLE,
                    Key={"PK": {"S": "NODE#node-s"}, "SK": {"S": "RES#res-live"}},
                    UpdateExpression="SET version = version + :one",
                    ExpressionAttributeValues={":one": {"N": "1"}},
                )

    with on_call(clients.dynamodb(), "TransactWriteItems", before=a_release_commits_first):
        result = put(handlers, "node-s", body(2, [spec(u, gpuModelId="nvidia-a100") for u in ids]))
    assert result.status == 200, result.body
    assert len(finals) == 2
    assert {state.unit(aws, "node-s", u)["gpuModelId"] for u in ids} == {"nvidia-a100"}
    assert state.reservation(aws, "node-s", "res-live")["status"] == "needs-review"
    assert state.item(aws, "node-s", "#NODE")["topologyGen"] == 2
    assert len(state.audit_records_of(aws, "AUDIT#node-s")) == 1

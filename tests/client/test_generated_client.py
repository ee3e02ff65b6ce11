"""The typed Python client (clients/python): the committed one is what the pinned generator
makes of docs/openapi.json, and the session from an empty stack (docs/sessions.md) runs
through it, in-process over moto behind the functions' WSGI bridge: answers are models with
datetimes, errors are exceptions named by their code."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import boto3
import httpx
import pytest

from devstack import client as generation
from devstack import openapi
from devstack.fleets import NODE_QUEUE_PREFIX
from devstack.functions import load_function
from reservations.kernel.aws import clients
from reservations.kernel.errors import ERRORS
from reservations_api_client.models import (
    CancelRequest,
    CreateReservationRequest,
    NodeRequest,
    PlaceWorkloadRequest,
    UnitSpec,
    UnitsRequest,
)
from reservations_client import (
    IdempotencyKeyReused,
    InvalidRequest,
    NotFound,
    Reservations,
    ReservationsApiError,
    Unauthorized,
    UnitsUnavailable,
)
from reservations_client.errors import error_for
from reservations_tools.fleet.loader import local_dead_letter_arn
from tests.support.wsgi import LambdaApi

pytestmark = pytest.mark.moto

U = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"]
BASE = "http://api.test"


def test_the_committed_client_is_what_the_generator_makes_of_the_document():
    assert generation.main(["--check"]) == 0


def test_a_planted_drift_is_caught(tmp_path, monkeypatch):
    copy = tmp_path / "reservations_api_client"
    generation.generate(copy)
    (copy / "client.py").write_text((copy / "client.py").read_text() + "\n# edited by hand\n")
    monkeypatch.setattr(generation, "PACKAGE", copy)
    assert generation.main(["--check"]) == 1


@pytest.fixture
def transport(load_fleet: Any, aws: Any, monkeypatch: pytest.MonkeyPatch) -> httpx.WSGITransport:
    """The keys-only fleet's stack: every API function behind API Gateway's routing."""
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    load_fleet(json.loads(open("fleets/keys-only.json").read()))  # noqa: SIM115
    functions = {name: load_function(name) for name in openapi.API_FUNCTIONS}
    return httpx.WSGITransport(app=LambdaApi(functions, openapi.render(openapi.generate())))


def as_key(transport: httpx.WSGITransport, key: str) -> Reservations:
    return Reservations(BASE, f"vl_local_only_{key}", transport=transport)


def h100(unit_id: str) -> UnitSpec:
    return UnitSpec(
        id=unit_id, alloc_class="vfio-group", gpu_model_id="nvidia-h100-sxm5-80gb",
        sellable_gpus=1, sellable=True,
    )  # fmt: skip


def test_the_session_from_an_empty_stack_through_the_client(transport):
    operator, owner, broker = (as_key(transport, k) for k in ("operator", "owner", "broker"))
    node = operator.put_node(
        "node-n1", NodeRequest(owner_org_id="org-acme", topology_gen=1, units=[h100(u) for u in U])
    )
    assert (node.id, node.unit_ids) == ("node-n1", U)
    assert isinstance(node.created_at, datetime)
    assert owner.get_node("node-n1").to_dict() == node.to_dict()

    body = CreateReservationRequest(
        unit_ids=U[:2], allowed_org_ids=["org-lab"], managing_org_ids=["org-broker"]
    )
    made = owner.create_reservation("node-n1", body, idempotency_key="lab-1")
    assert made.status == "active"
    assert isinstance(made.starts_at, datetime)
    assert owner.create_reservation("node-n1", body, idempotency_key="lab-1").id == made.id

    released = broker.release("node-n1", made.id, UnitsRequest(unit_ids=[U[0]]))
    assert released.released_unit_ids == [U[0]]

    def place(workload: str, tier: Any, org: str, unit: str) -> Any:
        request = PlaceWorkloadRequest(
            id=workload, kind="vm", tier=tier, org_id=org, unit_ids=[unit]
        )
        return operator.place_workload("node-n1", request)

    spot = place("vm-1", "spot", "org-spotbuyer", U[0])
    assert (spot.state, spot.unit_ids) == ("running", [U[0]])
    place("vm-2", "on-demand", "org-walkin", U[2])
    with pytest.raises(UnitsUnavailable) as refused:
        place("vm-3", "spot", "org-spotbuyer", U[1])
    assert (refused.value.status, refused.value.code) == (409, "units_unavailable")
    assert refused.value.details[0]["field"] == "unitIds[0]"
    assert refused.value.request_id

    reclaimed = broker.reclaim("node-n1", made.id, UnitsRequest(unit_ids=[U[0]]))
    assert (reclaimed.released_unit_ids, reclaimed.terminated) == ([], ["vm-1"])
    terminating = operator.get_workload("node-n1", "vm-1")
    assert terminating.state == "terminating"
    assert terminating.termination.reservation_id == made.id
    assert isinstance(terminating.termination.requested_at, datetime)

    operator.end_workload("node-n1", "vm-2")
    page = owner.list_workloads("node-n1", limit=1)
    assert [w.id for w in page.items] == ["vm-1"]
    assert not page.next_cursor  # vm-2 ended: one workload left
    units = broker.list_units("node-n1")
    assert [u.id for u in units] == U
    listed = owner.list_reservations("node-n1", limit=1)
    assert [r.id for r in listed.items] == [made.id]

    cancelled = owner.cancel("node-n1", made.id, CancelRequest(reason="done"))
    assert cancelled.status == "cancelled"
    assert owner.get_reservation("node-n1", made.id).status == "cancelled"


def test_every_error_is_an_exception_named_by_its_code(transport):
    operator, owner = as_key(transport, "operator"), as_key(transport, "owner")
    operator.put_node("node-n1", NodeRequest(owner_org_id="org-acme", topology_gen=1,
                                            units=[h100(U[0])]))  # fmt: skip
    with pytest.raises(NotFound) as hidden:
        as_key(transport, "broker").get_node("node-n1")
    assert hidden.value.status == 404
    with pytest.raises(Unauthorized):
        Reservations(BASE, "vl_nobody", transport=transport).list_units("node-n1")
    with pytest.raises(InvalidRequest) as bad:
        owner.list_reservations("node-n1", limit=101)
    assert bad.value.details[0]["field"] == "limit"
    body = CreateReservationRequest(unit_ids=[U[0]], allowed_org_ids=["org-lab"])
    owner.create_reservation("node-n1", body, idempotency_key="k")
    other = CreateReservationRequest(unit_ids=[U[0]], allowed_org_ids=["org-x"])
    with pytest.raises(IdempotencyKeyReused) as reused:
        owner.create_reservation("node-n1", other, idempotency_key="k")
    assert isinstance(reused.value, ReservationsApiError)
    assert reused.value.code == "idempotency_key_reused"


@pytest.mark.parametrize("error", ERRORS[1:], ids=lambda error: error.code)
def test_each_code_the_api_answers_has_its_own_exception(error):
    answer = httpx.Response(error.status, json={"error": "no", "code": error.code})
    raised = error_for(answer.status_code, answer.content, dict(answer.headers))
    assert type(raised).__name__ == error.__name__ or error.status >= 500
    assert raised.code == error.code

"""Every operation of the OpenAPI document lists exactly the error codes it can answer, per
status: a read's route declares them, a write's are the pipeline's own answers and the
refusals its use case's ``decide`` returns (its return type, which mypy holds the code to,
is their one declaration), and the document reads them. The fuzzers check the other half:
every code an operation answered is listed (``tests/support/fuzzing.call_and_check``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from devstack.openapi import SPEC
from reservations import endpoints
from reservations.kernel import errors
from reservations.kernel.errors import ERRORS
from reservations.kernel.http import routes
from reservations.kernel.http.openapi import ERROR_CODES
from reservations.kernel.pipeline import refusals_of
from reservations.workloads.errors import WorkloadExists

DOCUMENT: dict[str, Any] = json.loads(SPEC.read_text())
ALL_CODES = {error.code for error in ERRORS}


def _responses(route: routes.ApiRoute) -> dict[str, Any]:
    responses: dict[str, Any] = DOCUMENT["paths"][route.path][route.method.lower()]["responses"]
    return responses


@pytest.mark.parametrize("route", endpoints.ALL, ids=lambda route: route.operation_id)
def test_each_status_lists_exactly_the_codes_the_operation_answers(route):
    responses = _responses(route)
    errors_documented = {s for s in responses if s.startswith(("4", "5")) and s != "429"}
    assert errors_documented == {str(s) for s in (*route.error_statuses, 500, 503)}
    for status in errors_documented:
        listed = responses[status][ERROR_CODES]
        assert listed == list(route.error_codes(int(status))), (route.operation_id, status)
        assert listed, (route.operation_id, status)
        described = responses[status]["description"]
        named = {code for code in ALL_CODES if re.search(rf"\b{code}\b", described)}
        assert named == set(listed), (route.operation_id, status, described)


def test_an_operation_names_none_of_the_codes_only_others_answer():
    reclaim = _responses(endpoints.RECLAIM)
    assert reclaim["409"][ERROR_CODES] == ["reservation_not_active", "plan_stale",
                                           "not_enough_released", "storage_limit",
                                           "conflict", "idempotency_in_progress"]  # fmt: skip
    assert "subscription_limit" not in reclaim["409"]["description"]
    assert reclaim["422"][ERROR_CODES] == ["units_not_in_reservation", "idempotency_key_reused"]
    put = _responses(endpoints.PUT_NODE)
    assert put["409"][ERROR_CODES] == [
        "units_unavailable", "stale_topology", "storage_limit", "conflict",
    ]  # fmt: skip
    assert "422" not in put  # takes no key; no rule of a node update is a 422
    assert _responses(endpoints.CREATE_WEBHOOK)["409"][ERROR_CODES] == [
        "subscription_limit", "storage_limit", "conflict", "idempotency_in_progress",
    ]  # fmt: skip
    assert "409" not in _responses(endpoints.GET_RESERVATION)


def test_a_writes_refusals_are_what_its_decide_may_return_in_the_contracts_order():
    def decide(*_: Any) -> WorkloadExists | errors.NotFound | None: ...

    assert refusals_of(decide) == (errors.NotFound, WorkloadExists)
    assert WorkloadExists not in endpoints.RECLAIM.errors
    assert WorkloadExists in endpoints.PLACE_WORKLOAD.errors

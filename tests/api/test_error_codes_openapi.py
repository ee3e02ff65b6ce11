"""Every operation of the OpenAPI document lists exactly the error codes it can answer, per
status: its route declares them once (``ApiRoute.errors``), the document reads them, and
for a write they are compared with what really refuses it: the pipeline's own answers,
and the refusals its use case's ``decide`` returns (its return type, which mypy holds the
code to). The fuzzers check the other half: every code an operation answered is listed
(``tests/support/fuzzing.call_and_check``)."""

from __future__ import annotations

import json
import re
import types
import typing
from typing import Any

import pytest

from devstack.functions import load_function
from devstack.openapi import SPEC
from reservations import endpoints
from reservations.kernel import errors
from reservations.kernel.errors import ERRORS, ApiError
from reservations.kernel.http import routes
from reservations.kernel.http.openapi import ERROR_CODES

DOCUMENT: dict[str, Any] = json.loads(SPEC.read_text())
ALL_CODES = {error.code for error in ERRORS}


def _responses(route: routes.ApiRoute) -> dict[str, Any]:
    responses: dict[str, Any] = DOCUMENT["paths"][route.path][route.method.lower()]["responses"]
    return responses


def _members(annotation: Any) -> set[Any]:
    """The types a return annotation's unions name, flattened."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return set().union(*(_members(member) for member in typing.get_args(annotation)))
    return {annotation}


def refusals_of(decide: Any) -> set[type[ApiError]]:
    """The errors a use case's ``decide`` may return, by its return type."""
    returned = typing.get_type_hints(decide)["return"]
    return {m for m in _members(returned) if isinstance(m, type) and issubclass(m, ApiError)}


def what_a_write_answers(route: routes.ApiRoute) -> set[type[ApiError]] | None:
    """The errors the route's write really answers: the pipeline's (the keyed pair where
    its spec keeps answers under a key), and its decide's refusals; None: not a write of
    the pipeline."""
    spec = load_function(route.function).function.spec
    if spec is None:
        return None
    pipeline = routes.KEYED_WRITE if spec.keyed else routes.WRITE
    return {*pipeline, *refusals_of(spec.decide)}


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


@pytest.mark.parametrize("route", endpoints.ALL, ids=lambda route: route.operation_id)
def test_a_write_declares_what_its_pipeline_and_its_decide_refuse_with(route):
    answered = what_a_write_answers(route)
    if answered is None:  # a read, or the retry (its logic's own; the fuzzers observe it)
        assert route.method == "GET" or route is endpoints.RETRY_DELIVERY, route.operation_id
        return
    assert set(route.errors) == answered, route.operation_id


def test_an_operation_names_none_of_the_codes_only_others_answer():
    reclaim = _responses(endpoints.RECLAIM)
    assert reclaim["409"][ERROR_CODES] == ["reservation_not_active", "storage_limit",
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


def test_a_refusal_decide_returns_that_its_route_does_not_declare_is_caught():
    def decide(*_: Any) -> errors.NotFound | errors.WorkloadExists | None: ...

    assert refusals_of(decide) == {errors.NotFound, errors.WorkloadExists}
    assert errors.WorkloadExists not in endpoints.RECLAIM.errors

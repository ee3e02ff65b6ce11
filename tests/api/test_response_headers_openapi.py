"""The OpenAPI document declares what every response carries: X-Request-Id on each answer
of a function, WWW-Authenticate on a 401, Retry-After where a code of the status says when
to retry (409, 503), Location on a create, Idempotent-Replayed where a keyed route may
replay, 415 on every route that takes a body, and API Gateway's own 429 everywhere."""

from __future__ import annotations

import json
from typing import Any

from devstack.openapi import SPEC
from reservations import endpoints
from reservations.kernel.http import routes

DOCUMENT: dict[str, Any] = json.loads(SPEC.read_text())


def operation(route: routes.ApiRoute) -> dict[str, Any]:
    operation: dict[str, Any] = DOCUMENT["paths"][route.path][route.method.lower()]
    return operation


def headers(route: routes.ApiRoute, status: int) -> set[str]:
    return set(operation(route)["responses"][str(status)].get("headers", {}))


def test_every_answer_of_a_function_declares_its_request_id():
    for route in endpoints.ALL:
        for status, response in operation(route)["responses"].items():
            if status != "429":
                assert response["headers"]["X-Request-Id"] == {
                    "$ref": "#/components/headers/X-Request-Id"
                }, (route.operation_id, status)
    declared = DOCUMENT["components"]["headers"]
    assert set(declared) == {
        "X-Request-Id", "Retry-After", "Idempotent-Replayed", "Location", "WWW-Authenticate",
        "ETag",
    }  # fmt: skip
    assert declared["Retry-After"]["schema"]["type"] == "integer"


def test_the_challenge_the_retry_and_the_location_where_they_are_sent():
    for route in endpoints.ALL:
        assert "WWW-Authenticate" in headers(route, 401)
        assert "Retry-After" in headers(route, 503)
        assert "Retry-After" not in headers(route, 404)
        if 409 in route.error_statuses:  # only conflict and in-progress invite a retry
            retried = {"conflict", "idempotency_in_progress"} & set(route.error_codes(409))
            assert ("Retry-After" in headers(route, 409)) is bool(retried), route.operation_id
    # A webhook retry's 409s never succeed by waiting: no Retry-After.
    assert "Retry-After" not in headers(endpoints.RETRY_DELIVERY, 409)
    assert "Location" in headers(endpoints.CREATE_RESERVATION, 201)
    assert "Location" not in headers(endpoints.PLACE_WORKLOAD, 201)


def test_a_replay_is_declared_on_keyed_routes_only():
    for route in endpoints.ALL:
        replayable = "Idempotent-Replayed" in headers(route, route.status)
        assert replayable is route.keyed, route.operation_id
    assert "Idempotent-Replayed" in headers(endpoints.RECLAIM, 422)
    assert "Idempotent-Replayed" not in headers(endpoints.PUT_NODE, 409)


def test_a_route_with_a_body_answers_415_and_every_route_documents_the_429():
    for route in endpoints.ALL:
        responses = operation(route)["responses"]
        assert ("415" in responses) is (route.body is not None), route.operation_id
        assert responses["429"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/TooManyRequests"
        }
    assert "415" in operation(endpoints.CANCEL)["responses"]  # an optional body is still a body
    assert "415" not in operation(endpoints.END_WORKLOAD)["responses"]


def test_the_error_body_names_the_request():
    error_body = DOCUMENT["components"]["schemas"]["Error"]
    assert "requestId" in error_body["properties"]


def test_the_document_is_valid_openapi():
    from openapi_spec_validator import validate

    validate(DOCUMENT)  # raises, naming the place, when it is not


def test_the_etag_on_every_answer_carrying_one_reservation_and_on_a_412():
    versioned = {
        endpoints.CREATE_RESERVATION, endpoints.GET_RESERVATION, endpoints.CANCEL,
        endpoints.REAFFIRM, endpoints.RELEASE, endpoints.RECLAIM, endpoints.UPDATE_RESERVATION,
        endpoints.SET_LENDING,
    }  # fmt: skip
    for route in endpoints.ALL:
        assert ("ETag" in headers(route, route.status)) is (route in versioned), route.operation_id
        assert "ETag" not in headers(route, 404)
        if 412 in route.error_statuses:
            assert "ETag" in headers(route, 412)
    # A policy's removal honours If-Match too, and answers 204: no object, so no ETag.
    assert {r for r in endpoints.ALL if r.if_match} == versioned - {
        endpoints.CREATE_RESERVATION, endpoints.GET_RESERVATION,
    } | {endpoints.CLEAR_LENDING}  # fmt: skip

"""An error code is one definition (``kernel.errors``): its status, its code, whether a keyed
request keeps it, and its OpenAPI text. Here the contract's table is written down once, and
every ApiError class, the Idempotency-Key's kept answers and the generated OpenAPI document
must agree with it; a planted disagreement of each kind is caught."""

from __future__ import annotations

import json

import pytest

from devstack.openapi import SPEC
from reservations import endpoints
from reservations.kernel import errors
from reservations.kernel.errors import ERRORS, ApiError, documented_errors
from reservations.kernel.idempotency.rules import is_kept
from reservations.lifecycle.errors import ReservationNotActive

pytestmark = pytest.mark.disable_socket

# The contract's "Errors" table, each (status, code) with whether its "Idempotency" section
# stores it ("any 2xx, 409 reservation_not_active / units_unavailable / workload_exists /
# stale_topology / reservation_not_in_review / plan_stale /
# not_enough_released / not_enough_units, and any 422 but idempotency_key_reused").
CONTRACT: dict[tuple[int, str], bool] = {
    (400, "invalid_request"): False,
    (401, "unauthorized"): False,
    (404, "not_found"): False,
    (409, "reservation_not_active"): True,
    (409, "conflict"): False,
    (409, "idempotency_in_progress"): False,
    (409, "units_unavailable"): True,
    (409, "workload_exists"): True,
    (409, "stale_topology"): True,
    (409, "reservation_not_in_review"): True,
    (409, "reservation_not_changeable"): True,
    (409, "subscription_limit"): False,
    (409, "plan_stale"): True,
    (409, "not_enough_released"): True,
    (409, "not_enough_units"): True,
    (422, "unknown_reservation"): True,
    (422, "org_not_in_audience"): True,
    # The project's own (a webhook retry that can never succeed); never kept: the retry
    # keeps no answer, and a pending delivery may fail later and then be retried.
    (409, "delivery_not_failed"): False,
    (409, "subscription_disabled"): False,
    # The project's own: a write that would grow an item past DynamoDB's 400 KB, refused
    # whole; not kept (it fits again once the node's reservations leave its history).
    (409, "storage_limit"): False,
    # If-Match names another version: never kept (a retry of the same key acts, or gets
    # its first try's replay).
    (412, "precondition_failed"): False,
    (422, "units_not_in_reservation"): True,
    (422, "units_not_reservable"): True,
    (422, "units_not_sellable"): True,
    (422, "idempotency_key_reused"): False,
    (415, "unsupported_media_type"): False,
    (500, "internal"): False,
    (503, "internal"): False,
}
# Rows of the contract whose endpoints are not built yet (none now).
NOT_YET: set[tuple[int, str]] = set()


def every_error_class() -> list[type[ApiError]]:
    """ApiError and every class below it, however deep."""
    found: list[type[ApiError]] = [ApiError]
    for error in found:
        found.extend(error.__subclasses__())
    return found


def disagreements(classes: list[type[ApiError]]) -> list[str]:
    """Each way ``classes`` and the contract's table disagree, in words."""
    found = []
    for error in classes:
        row = (error.status, error.code)
        if row not in CONTRACT:
            found.append(f"{error.__name__}: {row} is not in the contract")
        elif error.kept is not CONTRACT[row]:
            found.append(f"{error.__name__}: kept is {error.kept}, the contract says otherwise")
        if is_kept(error.status, error.code) is not CONTRACT.get(row, False):
            found.append(f"{error.__name__}: is_kept disagrees with the contract")
        if error not in ERRORS:
            found.append(f"{error.__name__}: not registered in ERRORS")
    rows = [(error.status, error.code) for error in classes]
    found += [f"{row} is defined twice" for row in set(rows) if rows.count(row) > 1]
    return found


def test_every_error_class_says_what_the_contract_says():
    assert disagreements(every_error_class()) == []


def test_every_row_of_the_contract_has_its_one_class_but_the_ones_still_to_come():
    defined = {(error.status, error.code) for error in every_error_class()}
    assert set(CONTRACT) - defined == NOT_YET


def test_a_2xx_is_kept_and_a_code_of_another_status_is_not():
    assert is_kept(201)
    assert is_kept(204)
    assert not is_kept(409, "units_not_sellable")  # a 422's code under 409
    assert not is_kept(300)


@pytest.mark.parametrize(
    ("name", "planted", "said"),
    [
        ("UnitsUnavailable", {"kept": False}, "kept is False"),
        ("Conflict", {"kept": True}, "kept is True"),
        ("WorkloadExists", {"code": "workload_present"}, "not in the contract"),
        ("StaleTopology", {"status": 422}, "not in the contract"),
    ],
)
def test_a_planted_disagreement_is_caught(monkeypatch, name, planted, said):
    [error] = [error for error in every_error_class() if error.__name__ == name]
    for attribute, value in planted.items():
        monkeypatch.setattr(error, attribute, value)
    assert any(said in problem for problem in disagreements(every_error_class()))


def test_an_error_class_defined_outside_the_registry_is_caught():
    class Stray(Exception):
        status, code, kept = 409, "conflict", False

    assert disagreements([*every_error_class(), Stray]) == [  # type: ignore[list-item]
        "Stray: not registered in ERRORS",
        "(409, 'conflict') is defined twice",
    ]


def test_the_openapi_document_names_each_status_by_the_codes_of_its_operation():
    document = json.loads(SPEC.read_text())
    described = {
        (route.operation_id, status): response["description"]
        for route in endpoints.ALL
        for status, response in document["paths"][route.path][route.method.lower()][
            "responses"
        ].items()
        if int(status) >= 400 and int(status) != 429  # 429: API Gateway's, not the API's
    }
    for (operation_id, status), text in described.items():
        [route] = [route for route in endpoints.ALL if route.operation_id == operation_id]
        assert text == documented_errors(route.answering(int(status)))
        assert all(code in text for code in route.error_codes(int(status))), (status, text)
    assert (
        described["reclaimUnits", "400"] == "invalid_request: " + errors.InvalidRequest.documented
    )
    assert documented_errors([errors.Conflict, ReservationNotActive]).startswith(
        "reservation_not_active or conflict\n\n- `reservation_not_active`: "
    )


def test_the_registry_keeps_the_contracts_order_whatever_the_order_of_definition():
    """A slice's error joins at its row, wherever it is defined and whenever it is imported;
    a row already taken is refused when the class is defined."""
    rows = [error.row for error in ERRORS]
    assert rows == sorted(rows)
    assert len(set(rows)) == len(rows)
    twice = type("Twice", (), {"row": 160})  # a stand-in: a real subclass would stay listed
    with pytest.raises(TypeError, match="Twice: row 160 is Conflict's"):
        errors.register(twice)
    assert twice not in ERRORS

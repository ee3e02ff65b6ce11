"""What the OpenAPI document declares of a parameter, by where it is and its name: the
path's ids, the Idempotency-Key header (its name in any case), a query parameter sent
empty allowed; any other parameter is a mistake of the route, named. And a list filter
reads the same sent either way the document allows (``status=a,b`` or ``status=a&status=b``)."""

from __future__ import annotations

import pytest

from reservations import endpoints
from reservations.kernel.http.openapi import IDEMPOTENCY_KEY, PATH_ID, comma_list, parameter_fields

ROUTE = endpoints.LIST_RESERVATIONS

pytestmark = pytest.mark.disable_socket


def test_a_path_parameter_is_a_resource_id() -> None:
    assert parameter_fields("path", "nodeId", ROUTE) == PATH_ID


@pytest.mark.parametrize("name", ["Idempotency-Key", "idempotency-key", "IDEMPOTENCY-KEY"])
def test_the_idempotency_key_header_is_declared_whatever_its_case(name: str) -> None:
    assert parameter_fields("header", name, ROUTE) == IDEMPOTENCY_KEY


@pytest.mark.parametrize("name", ["limit", "cursor", "status"])
def test_a_query_parameter_is_its_routes_declaration_and_may_be_sent_empty(name: str) -> None:
    declared = ROUTE.query[name]
    assert parameter_fields("query", name, ROUTE) == {**declared, "allowEmptyValue": True}


def test_a_query_parameter_another_route_declares_is_no_parameter_of_this_one() -> None:
    with pytest.raises(ValueError, match="no declaration of the query parameter state"):
        parameter_fields("query", "state", ROUTE)


@pytest.mark.parametrize(
    ("location", "name"), [("header", "X-Trace"), ("cookie", "Idempotency-Key")]
)
def test_any_other_parameter_is_an_error_naming_it(location: str, name: str) -> None:
    with pytest.raises(ValueError, match=r"^no declaration of the ") as refused:
        parameter_fields(location, name, ROUTE)
    assert str(refused.value) == f"no declaration of the {location} parameter {name}"


def test_a_list_filter_sent_as_one_parameter_or_repeated_reads_the_same() -> None:
    assert comma_list(["active,expired"]) == comma_list(["active", "expired"]) == "active,expired"
    assert comma_list(None) is None

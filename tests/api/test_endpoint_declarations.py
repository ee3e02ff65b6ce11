"""Each endpoint is declared once, in its slice; what the stack and the tests hold of it is
held to that declaration here, so a drift fails: its function's block in template.yaml
(the shared entry point, its ENDPOINT, its route, its log group), its ``events/`` samples
for ``sam local invoke``, and the table of contents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devstack import api_functions, template
from devstack.functions import load_function
from reservations import endpoints
from reservations.kernel.http.functions import endpoint
from reservations.kernel.http.routes import ApiRoute

ROOT = Path(__file__).resolve().parents[2]
ROUTES = {route.function: route for route in endpoints.ALL}


def _block(route: ApiRoute) -> dict[str, Any]:
    return template.resources()[template.function_id(route.function)]["Properties"]


def test_every_function_an_endpoint_names_is_one_endpoint_and_every_api_function_is_declared():
    assert len(ROUTES) == len(endpoints.ALL)  # no function serves two
    assert set(template.api_endpoints()) == set(ROUTES)
    assert template.api_endpoints() == endpoints.ENDPOINT_NAMES
    for name, route in ROUTES.items():
        assert endpoint(endpoints.ENDPOINT_NAMES[name]) is route


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_the_functions_template_block_is_its_declaration(name: str) -> None:
    route = ROUTES[name]
    block = _block(route)
    assert block["CodeUri"] == "functions/api/"
    assert block["Handler"] == "app.lambda_handler"
    assert block["Description"] == f"{route.method} {route.path}"
    [event] = block["Events"].values()
    assert event["Type"] == "HttpApi"
    assert (event["Properties"]["Method"], event["Properties"]["Path"]) == (
        route.method,
        route.path,
    )
    log_group = block["LoggingConfig"]["LogGroup"]["Ref"]
    assert template.resources()[log_group]["Type"] == "AWS::Logs::LogGroup"


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_the_functions_sam_local_events_are_requests_of_its_route(name: str) -> None:
    route = ROUTES[name]
    samples = sorted((ROOT / "events" / name).glob("*.json"))
    assert samples, f"events/{name}/ has no sample for sam local invoke"
    for sample in samples:
        event = json.loads(sample.read_text())
        assert event["routeKey"] == f"{route.method} {route.path}", sample.name
        assert event["requestContext"]["http"]["method"] == route.method, sample.name


def test_a_function_loads_the_endpoint_its_variable_names_and_only_that_one() -> None:
    module = load_function("reclaim")
    assert module.function.spec is endpoints.RECLAIM.spec
    assert set(module.app.get_openapi_schema().paths) == {endpoints.RECLAIM.path}
    page = load_function("list_fleet_reservations")
    assert page.function.spec is None
    assert set(page.app.get_openapi_schema().paths) == {endpoints.LIST_FLEET_RESERVATIONS.path}


def test_an_unknown_endpoint_is_refused_by_name() -> None:
    with pytest.raises(LookupError, match="no one endpoint served by 'nothing'"):
        endpoint("capacity.nothing")
    with pytest.raises(ModuleNotFoundError):
        endpoint("noslice.reclaim")


def test_the_templates_api_functions_are_made_from_the_declarations() -> None:
    text = api_functions.TEMPLATE.read_text()
    assert api_functions.synced(text) == text, "template.yaml drifted: run make template"


def test_a_drifted_template_is_caught_and_made_right_again() -> None:
    text = api_functions.TEMPLATE.read_text()
    drifted = text.replace('dynamodb:LeadingKeys: ["NODE#*"]', 'dynamodb:LeadingKeys: ["*"]', 1)
    assert drifted != text
    assert api_functions.synced(drifted) == text

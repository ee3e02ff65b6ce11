"""docs/openapi.json is generated from the code: the committed file must match it."""

from devstack import openapi
from devstack.functions import load_function
from reservations import endpoints
from tests.support.bodies import resolved
from tests.support.openapi_statuses import VERSIONED_WRITE_STATUSES


def test_the_committed_spec_matches_the_code():
    generated = openapi.render(openapi.generate())
    assert openapi.SPEC.read_text() == generated, "docs/openapi.json is stale: run `make openapi`"


def test_both_endpoints_document_every_contract_status_with_the_error_shape():
    spec = openapi.generate()
    assert spec["openapi"].startswith("3.1")
    list_units = spec["paths"]["/v1/nodes/{nodeId}/reservations/units"]["get"]
    reclaim = spec["paths"]["/v1/nodes/{nodeId}/reservations/{reservationId}/reclaim"]["post"]
    assert set(list_units["responses"]) == {"200", "401", "404", "429", "500", "503"}
    assert set(reclaim["responses"]) == VERSIONED_WRITE_STATUSES
    for operation in (list_units, reclaim):
        for status, response in operation["responses"].items():
            if status not in ("200", "429"):  # 429: API Gateway's own body
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Error"}
    error_body = spec["components"]["schemas"]["Error"]
    assert error_body["required"] == ["error", "code"]
    body = resolved(spec, reclaim["requestBody"]["content"]["application/json"]["schema"])
    assert body["additionalProperties"] is False
    assert set(body["properties"]) == {"unitIds", "dryRun", "reason", "noticeSeconds"}
    notice = body["properties"]["noticeSeconds"]
    assert (notice["type"], notice["minimum"], notice["maximum"]) == ("integer", 0, 3600)
    assert spec["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"


def test_put_says_it_ignores_idempotency_key_and_declares_no_such_header():
    spec = openapi.generate()
    put = spec["paths"]["/v1/nodes/{nodeId}"]["put"]
    assert "idempotency-key" not in {p["name"].lower() for p in put["parameters"]}
    assert "takes no Idempotency-Key" in put["description"]
    assert "neither checked nor stored" in put["description"]
    posts = [ops["post"] for ops in spec["paths"].values() if "post" in ops]
    assert posts
    for post in posts:  # every POST declares the header PUT does not
        assert "idempotency-key" in {p["name"].lower() for p in post["parameters"]}


def test_each_route_is_served_by_the_function_it_names_and_no_other():
    served = {}
    for function in {route.function for route in endpoints.ALL}:
        app = load_function(function).app
        registered = app._dynamic_routes + app._static_routes  # a path without ids is static
        served[function] = {(r.method, r.openapi_path) for r in registered}
    named = {
        function: {(r.method, r.path) for r in endpoints.ALL if r.function == function}
        for function in served
    }
    assert served == named

"""The generated document describes create, get and list as they answer."""

from devstack import openapi
from tests.support.bodies import resolved
from tests.support.openapi_statuses import BODY_WRITE_STATUSES


def test_create_get_and_list_document_their_answers_parameters_and_body():
    spec = openapi.generate()
    page = spec["paths"]["/v1/nodes/{nodeId}/reservations"]
    create, listing = page["post"], page["get"]
    one = spec["paths"]["/v1/nodes/{nodeId}/reservations/{reservationId}"]["get"]
    assert set(create["responses"]) == BODY_WRITE_STATUSES - {"200"} | {"201"}
    assert set(listing["responses"]) == {"200", "400", "401", "404", "429", "500", "503"}
    assert set(one["responses"]) == {"200", "304", "401", "404", "429", "500", "503"}
    assert "content" not in one["responses"]["304"]  # no body
    assert set(one["responses"]["304"]["headers"]) == {"ETag", "X-Request-Id"}
    assert [p["name"] for p in one["parameters"] if p["in"] == "header"] == ["if-none-match"]
    assert {p["name"] for p in listing["parameters"]} == {"nodeId", "limit", "cursor", "status"}
    assert "idempotency-key" in {p["name"].lower() for p in create["parameters"]}
    body = resolved(spec, create["requestBody"]["content"]["application/json"]["schema"])
    assert body["additionalProperties"] is False
    assert body["required"] == ["unitIds", "allowedOrgIds"]
    assert set(body["properties"]) == {
        "unitIds", "allowedOrgIds", "managingOrgIds", "startsAt", "endsAt", "contractRef", "reason",
    }  # fmt: skip
    schemas = spec["components"]["schemas"]
    assert set(schemas["ReservationPage"]["properties"]) == {"items", "nextCursor"}
    assert "409" in create["responses"]
    assert "units_unavailable" in create["responses"]["409"]["description"]
    assert "units_not_reservable" in create["responses"]["422"]["description"]

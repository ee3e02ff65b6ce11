"""The generated document describes release and cancel as they answer."""

from devstack import openapi
from tests.support.bodies import resolved
from tests.support.openapi_statuses import VERSIONED_WRITE_STATUSES

PATH = "/v1/nodes/{nodeId}/reservations/{reservationId}/"


def test_release_takes_reclaims_body_and_cancel_an_optional_reason():
    spec = openapi.generate()
    release = spec["paths"][PATH + "release"]["post"]
    cancel = spec["paths"][PATH + "cancel"]["post"]
    reclaim = spec["paths"][PATH + "reclaim"]["post"]
    assert set(release["responses"]) == VERSIONED_WRITE_STATUSES
    assert set(cancel["responses"]) == VERSIONED_WRITE_STATUSES
    for operation in (release, cancel):
        ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": "#/components/schemas/Reservation"}
        named = {p["name"].lower() for p in operation["parameters"]}
        assert {"idempotency-key", "if-match"} <= named
    assert release["requestBody"]["required"] is reclaim["requestBody"]["required"] is True
    # Release's body is reclaim's without the notice, which only a reclaim gives.
    lend, take = (resolved(spec, op["requestBody"]["content"]["application/json"]["schema"])
                  for op in (release, reclaim))  # fmt: skip
    assert set(take["properties"]) - set(lend["properties"]) == {"noticeSeconds"}
    assert all(take["properties"][name] == field for name, field in lend["properties"].items())
    body = cancel["requestBody"]
    assert body["required"] is False
    schema = resolved(spec, body["content"]["application/json"]["schema"])
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"reason"}
    assert schema["properties"]["reason"]["anyOf"][0]["maxLength"] == 1000

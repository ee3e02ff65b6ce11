"""The client and the command line against an API newer than their OpenAPI document: an
event type, a workload state, a unit state, a reservation status, an error code and fields
this version does not know. Nothing raises; each value is kept as it came (the models'
``additional_properties`` hold the new fields), and the command line prints it so, in every
output. The newer API is a script behind the client's transport hook."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from reservations_api_client.models import UnitsRequest
from reservations_client import (
    NO_RETRIES,
    Conflict,
    Reservations,
    ReservationsApiError,
    ServerError,
    verify_webhook,
)
from reservations_client.cli import app
from reservations_client.cli.settings import Settings
from reservations_client.errors import error_for
from reservations_client.webhooks import new_secret, signed_headers
from reservations_client.wire import api_json

NEW_EVENT = {
    "specversion": "1.0", "id": "evt-01jdx8m2k4q7r9t3v5w7y9a1c3", "type": "workload.migrated",
    "source": "/v1/nodes/node-a1", "subject": "workloads/vm-40",
    "time": "2026-12-01T05:08:47.000Z", "datacontenttype": "application/json",
    "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "data": {"actor": {"system": "lending"}, "waitedFor": ["vm-17"], "unitIds": ["0000:09:00.0"]},
}  # fmt: skip
KNOWN_EVENT = {
    "specversion": "1.0", "id": "evt-01jdx8m2k4q7r9t3v5w7y9a1c2", "type": "reservation.reclaimed",
    "source": "/v1/nodes/node-a1", "subject": "reservations/res-a-active",
    "time": "2026-12-01T05:08:40.120Z", "datacontenttype": "application/json",
    "data": {"actor": {"orgId": "org-broker"}, "reason": "lab", "unitIds": ["0000:04:00.0"]},
}  # fmt: skip
WAITING = {
    "id": "vm-40", "nodeId": "node-a1", "kind": "vm", "tier": "preemptible",
    "orgId": "org-spotbuyer", "unitIds": ["0000:09:00.0"], "state": "paused",
    "createdAt": "2026-12-01T05:08:12Z", "pausedFor": ["vm-17"],
}  # fmt: skip
DRAINING = {
    "id": "0000:04:00.0", "allocClass": "vfio-group", "gpuModelId": "nvidia-h100-sxm5-80gb",
    "sellableGpus": 1, "state": "draining", "reservable": False, "health": "degraded",
}  # fmt: skip
SUSPENDED = {
    "id": "res-a-active", "nodeId": "node-a1", "status": "suspended",
    "startsAt": "2026-11-01T00:00:00Z", "endsAt": "2031-11-01T00:00:00Z",
    "allowedOrgIds": ["org-lab"], "managingOrgIds": ["org-broker"],
    "reservedUnitIds": ["0000:04:00.0"], "releasedUnitIds": [],
    "createdAt": "2026-11-01T00:00:00Z", "updatedAt": "2026-11-02T00:00:00Z", "etag": "e1",
    "suspendedUntil": "2026-12-02T00:00:00Z",
}  # fmt: skip
HOOK = {
    "id": "wh-1", "url": "https://hooks.example.com/in", "status": "paused",
    "types": ["workload.migrated"], "createdAt": "2026-12-01T00:00:00Z", "owner": "team-a",
}  # fmt: skip
DELIVERY = {
    "eventId": NEW_EVENT["id"], "type": "workload.migrated", "attempt": 1,
    "at": "2026-12-01T05:08:48Z", "state": "deferred", "region": "eu-west-1",
}  # fmt: skip
NEW_ERROR = {"error": "the org used its month", "code": "usage_limit", "requestId": "r-1"}

A1 = "/v1/nodes/node-a1"
ANSWERS: dict[str, tuple[int, Any]] = {
    "/v1/events": (200, {"items": [KNOWN_EVENT, NEW_EVENT], "nextCursor": "c1", "hasMore": False,
                         "newestAt": "2026-12-01T05:08:47Z"}),
    f"{A1}/events": (200, {"items": [NEW_EVENT], "nextCursor": "c1", "hasMore": False}),
    f"{A1}/workloads/vm-40": (200, WAITING),
    f"{A1}/workloads": (200, {"items": [WAITING], "total": 1}),
    f"{A1}/reservations/units": (200, [DRAINING]),
    f"{A1}/reservations/res-a-active": (200, SUSPENDED),
    f"{A1}/reservations": (200, {"items": [SUSPENDED]}),
    "/v1/webhooks": (200, {"items": [HOOK]}),
    "/v1/webhooks/wh-1/deliveries": (200, {"items": [DELIVERY]}),
    "/v1/webhooks/wh-1/deliveries/" + NEW_EVENT["id"]: (200, {
        "subscriptionId": "wh-1", "eventId": NEW_EVENT["id"], "type": "workload.migrated",
        "state": "deferred", "attemptCount": 1, "attempts": [DELIVERY]}),
    f"{A1}/reservations/res-a-active/release": (409, NEW_ERROR),
}  # fmt: skip


def newer_api(request: httpx.Request) -> httpx.Response:
    status, body = ANSWERS.get(request.url.path, (404, {"error": "no", "code": "not_found"}))
    return httpx.Response(status, json=body, headers={"X-Request-Id": "r-1"})


def client() -> Reservations:
    transport = httpx.MockTransport(newer_api)
    return Reservations("http://api.test", "vl_test", transport=transport, retry=NO_RETRIES)


Cli = Callable[..., str]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``cli(*args)`` runs one command against the newer API; its stdout (status 0)."""
    monkeypatch.setenv("COLUMNS", "80")

    def connect(settings: Settings) -> Reservations:
        return client()

    def run(*args: str) -> str:
        env = {"RESERVATIONS_API_URL": "http://api.test", "RESERVATIONS_API_KEY": "vl_test"}
        result = CliRunner().invoke(app, list(args), obj=connect, env=env)
        if result.exception and not isinstance(result.exception, SystemExit):
            raise result.exception
        assert result.exit_code == 0, result.output
        return result.stdout

    return run


def test_a_new_event_type_and_field_are_kept_by_every_feed_read():
    api = client()
    events = list(api.iter_events())
    assert [e.type_ for e in events] == ["reservation.reclaimed", "workload.migrated"]
    new = events[1]
    assert new["traceparent"] == NEW_EVENT["traceparent"]  # a new field: kept
    assert new.data.to_dict()["waitedFor"] == ["vm-17"]
    assert api_json(new) == NEW_EVENT  # the API's own JSON back, times with Z
    assert [e.type_ for e in api.iter_node_events("node-a1")] == ["workload.migrated"]
    page = api.events()
    assert page.additional_properties == {"newestAt": "2026-12-01T05:08:47Z"}
    followed = api.follow_events(wait=lambda: None)
    assert next(followed).id == KNOWN_EVENT["id"]


def test_a_new_workload_state_tier_and_field_are_kept():
    api = client()
    workload = api.get_workload("node-a1", "vm-40")
    assert (workload.state, workload.tier) == ("paused", "preemptible")
    assert workload["pausedFor"] == ["vm-17"]
    assert api_json(workload) == WAITING
    assert [w.state for w in api.iter_workloads("node-a1")] == ["paused"]


def test_a_new_unit_state_reservation_status_and_fields_are_kept():
    api = client()
    (unit,) = api.list_units("node-a1")
    assert (unit.state, unit["health"]) == ("draining", "degraded")
    assert api_json(unit) == DRAINING
    reservation = api.get_reservation("node-a1", "res-a-active")
    assert reservation.status == "suspended"
    assert api_json(reservation) == SUSPENDED
    assert [r.status for r in api.iter_reservations("node-a1")] == ["suspended"]


def test_new_webhook_values_are_kept():
    api = client()
    (hook,) = api.iter_webhooks()
    assert (hook.status, hook.types, hook["owner"]) == ("paused", ["workload.migrated"], "team-a")
    (delivery,) = api.iter_webhook_deliveries("wh-1")
    assert (delivery.state, delivery["region"]) == ("deferred", "eu-west-1")
    detail = api.webhook_delivery("wh-1", NEW_EVENT["id"])
    assert detail.attempts[0].state == "deferred"


def test_a_new_error_code_is_a_plain_api_error_with_its_code():
    with pytest.raises(ReservationsApiError) as raised:
        client().release("node-a1", "res-a-active", UnitsRequest(unit_ids=["0000:04:00.0"]))
    assert type(raised.value) is ReservationsApiError  # no class for a code not known yet
    assert (raised.value.status, raised.value.code, raised.value.request_id) == (
        409, "usage_limit", "r-1")  # fmt: skip
    assert isinstance(error_for(409, json.dumps({"code": "conflict"}).encode(), {}), Conflict)


def test_a_delivery_of_a_new_event_type_verifies():
    secret, body = new_secret(), json.dumps(NEW_EVENT)
    event = verify_webhook(body, signed_headers(secret, NEW_EVENT["id"], body,
                                                datetime.now(UTC)), secret)  # fmt: skip
    assert (event.type_, event["traceparent"]) == ("workload.migrated", NEW_EVENT["traceparent"])


def test_the_command_line_prints_new_values_as_they_came(cli):
    assert json.loads(cli("-o", "json", "events", "list")) == [KNOWN_EVENT, NEW_EVENT]
    table = cli("events", "list")
    assert "workload.migrated" in table
    assert "lending" in table  # the new system actor
    assert "traceparent" in cli("-o", "wide", "events", "list")
    assert json.loads(cli("-o", "json", "workloads", "get", "node-a1", "vm-40")) == WAITING
    shown = cli("workloads", "get", "node-a1", "vm-40")
    assert "paused" in shown
    assert "pausedFor" in shown
    assert "preemptible" in cli("workloads", "list", "node-a1")
    assert "draining" in cli("units", "node-a1")
    rows = list(csv.DictReader(io.StringIO(cli("-o", "csv", "units", "node-a1"))))
    assert (rows[0]["state"], rows[0]["health"], rows[0]["reservable"]) == (
        "draining", "degraded", "false")  # fmt: skip
    assert "suspended" in cli("reservations", "list", "--node", "node-a1")
    assert "suspendedUntil" in cli("-o", "wide", "reservations", "list", "--node", "node-a1")
    assert "paused" in cli("webhooks", "list")
    assert "deferred" in cli("webhooks", "deliveries", "wh-1")
    assert "deferred" in cli("webhooks", "delivery", "wh-1", NEW_EVENT["id"])


@pytest.mark.parametrize(("status", "body", "kind"), [
    (500, {"message": "Internal Server Error"}, ServerError),  # API Gateway's, no function
    (503, {"message": "Service Unavailable"}, ServerError),
    (502, "<html><body>Bad Gateway</body></html>", ServerError),  # a proxy's page
    (404, {"message": "Not Found"}, ReservationsApiError),
])  # fmt: skip
def test_an_error_answer_in_another_shape_is_its_status_error(status, body, kind):
    def answer(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body, headers={"Content-Type": "text/html"})
        return httpx.Response(status, json=body)

    api = Reservations("http://api.test", "vl_test", transport=httpx.MockTransport(answer),
                       retry=NO_RETRIES)  # fmt: skip
    with pytest.raises(kind) as raised:
        api.get_workload("node-a1", "vm-40")
    assert (type(raised.value), raised.value.status) == (kind, status)

"""API Gateway events for every route, built from the shipped ``events/`` files (one per
function and case, which ``sam local invoke -e`` reads too): the tests and the benchmark
build their requests here, each from its route's own file and path."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from reservations import endpoints
from reservations.kernel.http.routes import ApiRoute

EVENTS = Path(__file__).resolve().parents[2] / "events"


def event_file(relative: str) -> dict[str, Any]:
    return json.loads((EVENTS / relative).read_text())


def api_event(
    file: str,
    route: ApiRoute,
    ids: dict[str, str],
    authorization: str | None,
    body: Any = None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """``events/<file>`` sent to ``route`` with these path ids, the header (None: no
    Authorization) and the body (sent as JSON unless a string; None: no body)."""
    event = copy.deepcopy(event_file(file))
    path = route.path.format(**ids)
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = dict(ids)
    if "body" in event or body is not None:
        event["body"] = body if isinstance(body, str) or body is None else json.dumps(body)
        event["headers"].pop("content-length", None)
    event["headers"].pop("authorization", None)
    if authorization is not None:
        event["headers"]["authorization"] = authorization
    if idempotency_key is not None:
        event["headers"]["idempotency-key"] = idempotency_key
    return event


Key = str | None


def list_units_event(node_id: str, authorization: Key) -> dict[str, Any]:
    return api_event(
        "list_units/allowed.json", endpoints.LIST_UNITS, {"nodeId": node_id}, authorization
    )


def get_event(node_id: str, reservation_id: str, authorization: Key) -> dict[str, Any]:
    ids = {"nodeId": node_id, "reservationId": reservation_id}
    return api_event("get_reservation/visible.json", endpoints.GET_RESERVATION, ids, authorization)


def list_event(
    node_id: str, authorization: Key, query: dict[str, str] | None = None
) -> dict[str, Any]:
    ids = {"nodeId": node_id}
    event = api_event(
        "list_reservations/owner.json", endpoints.LIST_RESERVATIONS, ids, authorization
    )
    event["rawQueryString"] = urlencode(query or {})
    event.pop("queryStringParameters", None)
    if query:
        event["queryStringParameters"] = dict(query)
    return event


def reclaim_event(
    node_id: str, reservation_id: str, body: Any, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    ids = {"nodeId": node_id, "reservationId": reservation_id}
    file = "reclaim/real_run.json"
    return api_event(file, endpoints.RECLAIM, ids, authorization, body, idempotency_key)


def reclaim_plan_event(
    node_id: str, reservation_id: str, plan_id: str, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    """A plan's apply: ``{"planId": ...}`` (a dry run's answer gives it)."""
    ids = {"nodeId": node_id, "reservationId": reservation_id}
    file = "reclaim/plan_not_ours.json"
    body = {"planId": plan_id}
    return api_event(file, endpoints.RECLAIM, ids, authorization, body, idempotency_key)


def release_event(
    node_id: str, reservation_id: str, body: Any, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    ids = {"nodeId": node_id, "reservationId": reservation_id}
    file = "release/real_run.json"
    return api_event(file, endpoints.RELEASE, ids, authorization, body, idempotency_key)


def cancel_event(
    node_id: str, reservation_id: str, body: Any, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    """A cancel, with ``body`` None: no body at all."""
    ids = {"nodeId": node_id, "reservationId": reservation_id}
    file = "cancel/with_reason.json"
    return api_event(file, endpoints.CANCEL, ids, authorization, body, idempotency_key)


def update_event(
    node_id: str, reservation_id: str, body: Any, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    """A PATCH of a reservation (``body``: its changes)."""
    ids = {"nodeId": node_id, "reservationId": reservation_id}
    file = "update_reservation/extend.json"
    return api_event(file, endpoints.UPDATE_RESERVATION, ids, authorization, body, idempotency_key)


def reaffirm_event(
    node_id: str, reservation_id: str, body: Any, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    ids = {"nodeId": node_id, "reservationId": reservation_id}
    file = "reaffirm/reaffirm.json"
    return api_event(file, endpoints.REAFFIRM, ids, authorization, body, idempotency_key)


def create_event(
    node_id: str, body: Any, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    ids, file = {"nodeId": node_id}, "create_reservation/created.json"
    return api_event(file, endpoints.CREATE_RESERVATION, ids, authorization, body, idempotency_key)


def place_event(
    node_id: str, body: Any, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    ids, file = {"nodeId": node_id}, "place_workload/spot_on_released.json"
    return api_event(file, endpoints.PLACE_WORKLOAD, ids, authorization, body, idempotency_key)


def end_event(
    node_id: str, workload_id: str, authorization: Key, idempotency_key: Key = None
) -> dict[str, Any]:
    ids = {"nodeId": node_id, "workloadId": workload_id}
    file = "end_workload/ended.json"
    return api_event(file, endpoints.END_WORKLOAD, ids, authorization, None, idempotency_key)


def node_event(node_id: str, body: Any, authorization: Key) -> dict[str, Any]:
    ids = {"nodeId": node_id}
    return api_event("put_node/register.json", endpoints.PUT_NODE, ids, authorization, body)


def sample(route: ApiRoute) -> str:
    """The route's first ``events/`` file (by name): the one a call of it is made from when
    the call needs no case of its own."""
    return sorted(EVENTS.glob(f"{route.function}/*.json"))[0].relative_to(EVENTS).as_posix()


def webhook_event(
    route: ApiRoute,
    authorization: Key,
    subscription_id: str | None = None,
    body: Any = None,
    idempotency_key: Key = None,
    query: dict[str, str] | None = None,
    event_id: str | None = None,
) -> dict[str, Any]:
    """A call of a ``/v1/webhooks`` route (no body, key or query unless given)."""
    ids = {} if subscription_id is None else {"subscriptionId": subscription_id}
    if event_id is not None:
        ids["eventId"] = event_id
    event = api_event(sample(route), route, ids, authorization, body, idempotency_key)
    if idempotency_key is None:
        event["headers"].pop("idempotency-key", None)
    if body is None:
        event.pop("body", None)
    event["rawQueryString"] = urlencode(query or {})
    event.pop("queryStringParameters", None)
    if query:
        event["queryStringParameters"] = dict(query)
    if not ids:
        event.pop("pathParameters", None)
    return event


def node_get_event(node_id: str, authorization: Key) -> dict[str, Any]:
    return api_event("get_node/owner.json", endpoints.GET_NODE, {"nodeId": node_id}, authorization)


def workloads_event(
    node_id: str, authorization: Key, query: dict[str, str] | None = None
) -> dict[str, Any]:
    ids = {"nodeId": node_id}
    event = api_event("list_workloads/owner.json", endpoints.LIST_WORKLOADS, ids, authorization)
    event["rawQueryString"] = urlencode(query or {})
    event.pop("queryStringParameters", None)
    if query:
        event["queryStringParameters"] = dict(query)
    return event


def workload_get_event(node_id: str, workload_id: str, authorization: Key) -> dict[str, Any]:
    ids = {"nodeId": node_id, "workloadId": workload_id}
    return api_event("get_workload/own.json", endpoints.GET_WORKLOAD, ids, authorization)


def fleet_event(authorization: Key, query: dict[str, str] | None = None) -> dict[str, Any]:
    """``GET /v1/reservations`` with this key and query (none: no query string)."""
    event = api_event(
        "list_fleet_reservations/broker.json", endpoints.LIST_FLEET_RESERVATIONS, {}, authorization
    )
    event["rawQueryString"] = urlencode(query or {})
    event.pop("queryStringParameters", None)
    if query:
        event["queryStringParameters"] = dict(query)
    return event


def usage_event(authorization: Key, query: dict[str, str] | None = None) -> dict[str, Any]:
    """``GET /v1/usage`` with this key and query (none: no query string)."""
    event = api_event("list_usage/owner.json", endpoints.LIST_USAGE, {}, authorization)
    event["rawQueryString"] = urlencode(query or {})
    event.pop("queryStringParameters", None)
    event.pop("pathParameters", None)
    if query:
        event["queryStringParameters"] = dict(query)
    return event

"""API Gateway events for create, get and list reservations, built from ``events/``."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import urlencode

from tests.support.lambdas import event_file


def _with_key(event: dict[str, Any], authorization: str | None) -> dict[str, Any]:
    if authorization is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = authorization
    return event


def _at(event: dict[str, Any], path: str, parameters: dict[str, str]) -> dict[str, Any]:
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = parameters
    return event


def create_event(
    node_id: str, body: Any, authorization: str | None, idempotency_key: str | None = None
) -> dict[str, Any]:
    """``events/create_reservation/created.json`` for another node, body and header; a
    string body is sent as is."""
    event = copy.deepcopy(event_file("create_reservation/created.json"))
    _at(event, f"/v1/nodes/{node_id}/reservations", {"nodeId": node_id})
    event["body"] = body if isinstance(body, str) or body is None else json.dumps(body)
    event["headers"].pop("content-length", None)
    if idempotency_key is not None:
        event["headers"]["idempotency-key"] = idempotency_key
    return _with_key(event, authorization)


def get_event(node_id: str, reservation_id: str, authorization: str | None) -> dict[str, Any]:
    event = copy.deepcopy(event_file("get_reservation/visible.json"))
    path = f"/v1/nodes/{node_id}/reservations/{reservation_id}"
    _at(event, path, {"nodeId": node_id, "reservationId": reservation_id})
    return _with_key(event, authorization)


def list_event(
    node_id: str, authorization: str | None, query: dict[str, str] | None = None
) -> dict[str, Any]:
    event = copy.deepcopy(event_file("list_reservations/owner.json"))
    _at(event, f"/v1/nodes/{node_id}/reservations", {"nodeId": node_id})
    event["rawQueryString"] = urlencode(query or {})
    if query:
        event["queryStringParameters"] = dict(query)
    else:
        event.pop("queryStringParameters", None)
    return _with_key(event, authorization)

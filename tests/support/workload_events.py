"""API Gateway events for the scheduler's place and end calls, built from ``events/``."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.support.lambdas import event_file


def _keyed(
    event: dict[str, Any], authorization: str | None, idempotency_key: str | None
) -> dict[str, Any]:
    if authorization is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = authorization
    if idempotency_key is not None:
        event["headers"]["idempotency-key"] = idempotency_key
    return event


def place_event(
    node_id: str, body: Any, authorization: str | None, idempotency_key: str | None = None
) -> dict[str, Any]:
    """``events/place_workload/spot_on_released.json`` for another node, body and header; a
    string body is sent as is."""
    event = copy.deepcopy(event_file("place_workload/spot_on_released.json"))
    path = f"/v1/nodes/{node_id}/workloads"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"nodeId": node_id}
    event["body"] = body if isinstance(body, str) or body is None else json.dumps(body)
    event["headers"].pop("content-length", None)
    return _keyed(event, authorization, idempotency_key)


def end_event(
    node_id: str, workload_id: str, authorization: str | None, idempotency_key: str | None = None
) -> dict[str, Any]:
    """``events/end_workload/ended.json`` for another node, workload and header."""
    event = copy.deepcopy(event_file("end_workload/ended.json"))
    path = f"/v1/nodes/{node_id}/workloads/{workload_id}"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"nodeId": node_id, "workloadId": workload_id}
    return _keyed(event, authorization, idempotency_key)

"""API Gateway events for release and cancel, built from the shipped events/ files."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.support.lambdas import event_file


def _event(
    template: str,
    action: str,
    node_id: str,
    reservation_id: str,
    body: Any,
    authorization: str | None,
    idempotency_key: str | None,
) -> dict[str, Any]:
    event = copy.deepcopy(event_file(template))
    path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/{action}"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"nodeId": node_id, "reservationId": reservation_id}
    event["body"] = body if isinstance(body, str) or body is None else json.dumps(body)
    if authorization is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = authorization
    if idempotency_key is not None:
        event["headers"]["idempotency-key"] = idempotency_key
    return event


def release_event(
    node_id: str,
    reservation_id: str,
    body: Any,
    authorization: str | None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """``events/release/real_run.json`` for another path, body (JSON unless a string) and key."""
    return _event(
        "release/real_run.json",
        "release",
        node_id,
        reservation_id,
        body,
        authorization,
        idempotency_key,
    )


def cancel_event(
    node_id: str,
    reservation_id: str,
    body: Any,
    authorization: str | None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """``events/cancel/with_reason.json`` for another path, body (None: no body) and key."""
    return _event(
        "cancel/with_reason.json", "cancel", node_id, reservation_id, body, authorization,
        idempotency_key,
    )  # fmt: skip

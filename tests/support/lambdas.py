"""Loading the Lambda handlers in-process and building their API Gateway events."""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from devstack.functions import load_function as load_function  # the tests' usual import

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"


def swap_ports(monkeypatch: pytest.MonkeyPatch, module: ModuleType, **changes: Any) -> None:
    """Replace some of a loaded function's ports for the test: its API function's, or the
    module's own (the sweeper's, the reports')."""
    holder = getattr(module, "function", module)
    monkeypatch.setattr(holder, "ports", dataclasses.replace(holder.ports, **changes))


def event_file(relative: str) -> dict[str, Any]:
    return json.loads((EVENTS / relative).read_text())


def list_units_event(node_id: str, authorization: str | None) -> dict[str, Any]:
    """The ``events/list_units/allowed.json`` event, for another node and header."""
    event = copy.deepcopy(event_file("list_units/allowed.json"))
    path = f"/v1/nodes/{node_id}/reservations/units"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"nodeId": node_id}
    if authorization is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = authorization
    return event


@dataclass
class FakeContext:
    """Lambda's context; its remaining time runs down from ``timeout_ms`` (default: the
    sweeper's 60 s, the longest of the stack) as Lambda's does."""

    function_name: str = "test-function"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000001"
    timeout_ms: int = 60_000
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        elapsed_ms = (time.monotonic() - self.started) * 1000
        return max(0, int(self.timeout_ms - elapsed_ms))


@dataclass
class HttpResult:
    status: int
    headers: dict[str, str]
    body_text: str

    @property
    def body(self) -> Any:
        return json.loads(self.body_text)


def invoke(
    module: ModuleType, event: dict[str, Any], context: FakeContext | None = None
) -> HttpResult:
    response = module.lambda_handler(event, context or FakeContext())
    headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    return HttpResult(response["statusCode"], headers, response.get("body") or "")


def reclaim_event(
    node_id: str,
    reservation_id: str,
    body: Any,
    authorization: str | None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """The ``events/reclaim/real_run.json`` event for another path, body and header.

    ``body`` is sent as JSON unless it is a string (sent as is, to test bad bodies).
    """
    event = copy.deepcopy(event_file("reclaim/real_run.json"))
    path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/reclaim"
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


def node_event(node_id: str, body: Any, authorization: str | None) -> dict[str, Any]:
    """The ``events/put_node/register.json`` event for another node, body and header."""
    event = copy.deepcopy(event_file("put_node/register.json"))
    path = f"/v1/nodes/{node_id}"
    event["rawPath"] = path
    event["requestContext"]["http"]["path"] = path
    event["pathParameters"] = {"nodeId": node_id}
    event["body"] = body if isinstance(body, str) or body is None else json.dumps(body)
    if authorization is None:
        event["headers"].pop("authorization", None)
    else:
        event["headers"]["authorization"] = authorization
    return event


def reaffirm_event(
    node_id: str,
    reservation_id: str,
    body: Any,
    authorization: str | None,
    idempotency_key: str | None = None,
) -> dict[str, Any]:
    """The ``events/reaffirm/reaffirm.json`` event for another path, body and header."""
    event = copy.deepcopy(event_file("reaffirm/reaffirm.json"))
    path = f"/v1/nodes/{node_id}/reservations/{reservation_id}/reaffirm"
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

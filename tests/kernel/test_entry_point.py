"""The stack every function's handler wears (``kernel.wiring.entry_point``): a scheduled or queued
invocation logs under its own id, EventBridge's event id or the batch's first message id
(an API request's is its request id, set by the resolver: tests/kernel/test_write_function)."""

from __future__ import annotations

from typing import Any

import pytest

from devstack.functions import FakeContext
from reservations.kernel.observability import SCHEDULED_EVENT, SQS_BATCH, logger
from reservations.kernel.wiring import entry_point

pytestmark = pytest.mark.disable_socket


def correlation_id(path: str, event: dict[str, Any]) -> Any:
    @entry_point(path)
    def handler(_event: dict[str, Any], _context: Any) -> Any:
        return logger.get_correlation_id()

    return handler(event, FakeContext())


def test_a_scheduled_or_queued_invocation_logs_under_its_own_id() -> None:
    scheduled = {"id": "evt-1", "detail-type": "Scheduled Event", "source": "aws.events"}
    assert correlation_id(SCHEDULED_EVENT, scheduled) == "evt-1"
    assert correlation_id(SQS_BATCH, {"Records": [{"messageId": "m-1"}]}) == "m-1"

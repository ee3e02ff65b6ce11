"""The idempotency records of the DAL: the kept answer read back as it was written (moto),
and the answer a cancelled transaction's reason carries only when the record's condition
is what cancelled it, at that action."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.idempotency.models import (
    AnswerRecord,
    IdempotentRequest,
    Outcome,
    StoredResponse,
)
from reservations.kernel.idempotency.table import (
    idempotency_item,
    keep_answer,
    stored_answer,
    stored_in_cancellation,
)

pytestmark = [pytest.mark.moto, pytest.mark.disable_socket]

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OUTCOME = Outcome(201, '{"id":"res-1"}', (("Location", "/v1/nodes/node-a/reservations/res-1"),))
ANSWER = AnswerRecord(
    IdempotentRequest("key-1#POST /v1/reservations#k-1", "hash-1"),
    OUTCOME,
    NOW,
    NOW + timedelta(hours=24),
)
STORED = StoredResponse("hash-1", OUTCOME, NOW + timedelta(hours=24))


def test_a_kept_answer_is_read_back_under_its_scope(aws: Any) -> None:
    assert stored_answer(ANSWER.request.scope) is None
    assert keep_answer(ANSWER) is None
    assert stored_answer(ANSWER.request.scope) == STORED
    assert stored_answer("key-1#POST /v1/reservations#k-2") is None


RECORD = to_attributes(idempotency_item(ANSWER))
HELD = {"Code": "ConditionalCheckFailed", "Item": RECORD}


def test_the_record_that_cancelled_the_transaction_at_its_action_is_the_answer() -> None:
    assert stored_in_cancellation([{"Code": "None"}, HELD], 1) == STORED
    assert stored_in_cancellation([HELD], 0) == STORED


def test_a_cancellation_for_another_reason_or_action_carries_no_answer() -> None:
    assert stored_in_cancellation([HELD], 1) is None  # the record was no action of it
    assert stored_in_cancellation([HELD, {"Code": "None"}], 1) is None
    assert stored_in_cancellation([{"Code": "ConditionalCheckFailed"}], 0) is None  # no item
    assert stored_in_cancellation([{"Code": "TransactionConflict", "Item": RECORD}], 0) is None

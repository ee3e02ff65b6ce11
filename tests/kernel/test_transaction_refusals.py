"""What a refused TransactWriteItems means to the write: an item DynamoDB would not store
(past its 400 KB) is the client's 409 ``storage_limit``, whether DynamoDB refuses the whole
request or cancels the action that grows an item; a failed condition is a lost race."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from reservations.kernel.aws import clients, transactions
from reservations.kernel.errors import StorageLimit
from reservations.kernel.writes import WriteConflict

pytestmark = pytest.mark.disable_socket

TOO_LARGE = "Item size to update has exceeded the maximum allowed size"


class Refusing:
    def __init__(self, error: ClientError) -> None:
        self.error = error

    def transact_write_items(self, **_: Any) -> Any:
        raise self.error


def refused(code: str, message: str = "no", reasons: list[dict[str, str]] | None = None) -> Any:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": message}}
    if reasons is not None:
        response["CancellationReasons"] = reasons
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error",
    [
        refused("ValidationException", "Item size has exceeded the maximum allowed size"),
        refused(
            "TransactionCanceledException",
            "cancelled",
            [{"Code": "None"}, {"Code": "ValidationError", "Message": TOO_LARGE}],
        ),
    ],
    ids=["the request", "an update's cancellation"],
)
def test_an_item_past_400_kb_is_the_storage_limit(monkeypatch, error):
    monkeypatch.setattr(clients, "dynamodb", lambda: Refusing(error))
    with pytest.raises(StorageLimit):
        transactions.run([{"Put": {}}, {"Update": {}}])


def test_a_failed_condition_is_a_lost_race_and_another_refusal_is_raised(monkeypatch):
    race = refused("TransactionCanceledException", "c", [{"Code": "ConditionalCheckFailed"}])
    monkeypatch.setattr(clients, "dynamodb", lambda: Refusing(race))
    with pytest.raises(WriteConflict):
        transactions.run([{"Put": {}}])
    other = refused("TransactionCanceledException", "c", [{"Code": "ValidationError"}])
    monkeypatch.setattr(clients, "dynamodb", lambda: Refusing(other))
    with pytest.raises(ClientError):
        transactions.run([{"Put": {}}])

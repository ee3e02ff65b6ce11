"""The local emulator answers a transaction sent again with its ClientRequestToken as the
first was, as DynamoDB does: the SDK resends a TransactWriteItems whose answer was lost
(a read timeout on a busy machine), and moto alone would run it again, fail its conditions,
and the write that committed would be answered as a lost race."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

pytestmark = pytest.mark.races  # the shared emulator, one DynamoDB request at a time


def _put(key: str) -> dict[str, Any]:
    return {
        "Put": {
            "TableName": "ReservationsTable",
            "Item": {"PK": {"S": key}, "SK": {"S": "#TOKEN"}},
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }


def test_a_transaction_sent_again_with_its_token_is_answered_as_the_first(emulated):
    dynamodb = emulated["dynamodb"]
    key, token = f"TOKENTEST#{uuid.uuid4().hex}", uuid.uuid4().hex
    first = dynamodb.transact_write_items(TransactItems=[_put(key)], ClientRequestToken=token)
    again = dynamodb.transact_write_items(TransactItems=[_put(key)], ClientRequestToken=token)
    assert (
        first["ResponseMetadata"]["HTTPStatusCode"]
        == again["ResponseMetadata"]["HTTPStatusCode"]
        == 200
    )
    with pytest.raises(ClientError) as other:  # another token: a new request, refused
        dynamodb.transact_write_items(
            TransactItems=[_put(key)], ClientRequestToken=uuid.uuid4().hex
        )
    assert other.value.response["Error"]["Code"] == "TransactionCanceledException"
    with pytest.raises(ClientError):  # no token at all: the same
        dynamodb.transact_write_items(TransactItems=[_put(key)])

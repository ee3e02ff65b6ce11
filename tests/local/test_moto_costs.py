"""The emulator's TransactWriteItems backs up only the items it names: a cancelled
transaction still changes nothing, in the table and in its stream (what the event relay
reads)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from reservations.kernel.aws.codec import from_attributes, to_attributes

pytestmark = pytest.mark.moto

TABLE = "ReservationsTable"


def _get(aws: Any, sort_key: str) -> dict[str, Any] | None:
    key = to_attributes({"PK": "NODE#n", "SK": sort_key})
    found = aws.get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item")
    return from_attributes(found) if found else None


def _stream_records(aws: Any) -> int:
    arn = aws.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]
    streams = boto3.client("dynamodbstreams")
    shard = streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"][0]["ShardId"]
    iterator = streams.get_shard_iterator(
        StreamArn=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )["ShardIterator"]
    return len(streams.get_records(ShardIterator=iterator)["Records"])


def test_a_cancelled_transaction_changes_nothing(aws):
    aws.put_item(TableName=TABLE, Item=to_attributes({"PK": "NODE#n", "SK": "B", "version": 1}))
    before = _stream_records(aws)
    actions = [
        {"Put": {"TableName": TABLE, "Item": to_attributes({"PK": "NODE#n", "SK": "A"})}},
        {"Update": {"TableName": TABLE, "Key": to_attributes({"PK": "NODE#n", "SK": "B"}),
                    "UpdateExpression": "SET version = :two",
                    "ExpressionAttributeValues": to_attributes({":two": 2})}},
        {"Delete": {"TableName": TABLE, "Key": to_attributes({"PK": "NODE#n", "SK": "B0"})}},
        {"ConditionCheck": {"TableName": TABLE, "Key": to_attributes({"PK": "NODE#m", "SK": "C"}),
                            "ConditionExpression": "attribute_exists(PK)"}},
    ]  # fmt: skip
    with pytest.raises(ClientError, match="TransactionCanceled"):
        aws.transact_write_items(TransactItems=actions)
    assert _get(aws, "A") is None
    assert _get(aws, "B") == {"PK": "NODE#n", "SK": "B", "version": 1}
    assert _stream_records(aws) == before
    aws.transact_write_items(TransactItems=actions[:2])  # and one that commits, commits
    assert _get(aws, "A") is not None
    assert _get(aws, "B") == {"PK": "NODE#n", "SK": "B", "version": 2}


def test_the_emulators_plain_answers_are_moto_s_own(load_fleet, aws):
    """The emulator writes moto's DynamoDB answers as plain JSON: the same answers, parsed,
    for what the service stores (a node with its history, through its list index)."""
    from moto.dynamodb.responses import DynamoResult

    from devstack import fleet_documents as f
    from devstack import moto_costs

    node = f.node("node-a", [f.unit("0000:04:00.0")], [f.reservation("res-1", ["0000:04:00.0"])])
    load_fleet(f.fleet([node | {"generatedPastReservations": 30}]))
    query = {
        "TableName": "ReservationsTable",
        "IndexName": "NodeReservations",
        "KeyConditionExpression": "listPK = :pk",
        "ExpressionAttributeValues": {":pk": {"S": "NODE#node-a"}},
    }
    # As it was (another test in this process may have started the emulator, which plain
    # answers for good), and moto's own.
    found = DynamoResult.execute_result
    moto_own = getattr(found, "_moto_own", found)
    try:
        DynamoResult.execute_result = moto_own  # type: ignore[method-assign]
        own = aws.query(**query)
        moto_costs.plain_answers()
        assert DynamoResult.execute_result is not moto_own
        plain = aws.query(**query)
    finally:
        DynamoResult.execute_result = found  # type: ignore[method-assign]
    assert plain["Count"] == own["Count"] == 32  # 30 past, res-1, the list access item
    assert plain["Items"] == own["Items"]

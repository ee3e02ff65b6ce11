"""Reading what the functions wrote, and a spot placement as the scheduler would make it."""

from __future__ import annotations

import json
from typing import Any

from reservations.dal.items import (
    RESERVATION_PREFIX,
    UNIT_PREFIX,
    WORKLOAD_PREFIX,
    audit_pk,
    from_attributes,
    node_pk,
    to_attributes,
)

TABLE = "ReservationsTable"


def item(dynamodb: Any, node_id: str, sort_key: str) -> dict[str, Any] | None:
    response = dynamodb.get_item(
        TableName=TABLE, Key=to_attributes({"PK": node_pk(node_id), "SK": sort_key})
    )
    return from_attributes(response["Item"]) if "Item" in response else None


def workload(dynamodb: Any, node_id: str, workload_id: str) -> dict[str, Any]:
    found = item(dynamodb, node_id, WORKLOAD_PREFIX + workload_id)
    assert found is not None
    return found


def reservation(dynamodb: Any, node_id: str, reservation_id: str) -> dict[str, Any]:
    found = item(dynamodb, node_id, RESERVATION_PREFIX + reservation_id)
    assert found is not None
    return found


def unit(dynamodb: Any, node_id: str, unit_id: str) -> dict[str, Any]:
    found = item(dynamodb, node_id, UNIT_PREFIX + unit_id)
    assert found is not None
    return found


def audit_records(dynamodb: Any, node_id: str, reservation_id: str) -> list[dict[str, Any]]:
    response = dynamodb.query(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues=to_attributes({":pk": audit_pk(node_id, reservation_id)}),
    )
    return [from_attributes(i) for i in response["Items"]]


def whole_table(dynamodb: Any) -> list[dict[str, Any]]:
    items = dynamodb.scan(TableName=TABLE, ConsistentRead=True)["Items"]
    return sorted((from_attributes(i) for i in items), key=lambda i: (i["PK"], i["SK"]))


def node_queue_url(dynamodb: Any, node_id: str) -> str:
    node = item(dynamodb, node_id, "#NODE")
    assert node is not None
    return str(node["queueUrl"])


def drain(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Every message on the queue, bodies decoded (and deleted, so a second drain is empty)."""
    bodies = []
    while True:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        if not messages:
            return bodies
        for message in messages:
            bodies.append(json.loads(message["Body"]))
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


def place_spot_workload(dynamodb: Any, node_id: str, workload_id: str, unit_ids: list[str]) -> None:
    """What the spot scheduler does: claim free units (bumping their version) and add the
    workload, in one transaction."""
    actions: list[dict[str, Any]] = [
        {
            "Put": {
                "TableName": TABLE,
                "Item": to_attributes(
                    {
                        "PK": node_pk(node_id),
                        "SK": WORKLOAD_PREFIX + workload_id,
                        "id": workload_id,
                        "kind": "vm",
                        "tier": "spot",
                        "orgId": "org-spotbuyer",
                        "unitIds": unit_ids,
                        "state": "running",
                        "version": 1,
                    }
                ),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }
    ]
    for unit_id in unit_ids:
        actions.append(
            {
                "Update": {
                    "TableName": TABLE,
                    "Key": to_attributes({"PK": node_pk(node_id), "SK": UNIT_PREFIX + unit_id}),
                    "UpdateExpression": "SET claimedBy = :claim, version = version + :one",
                    "ConditionExpression": "attribute_not_exists(claimedBy)",
                    "ExpressionAttributeValues": to_attributes(
                        {":claim": f"vm:{workload_id}", ":one": 1}
                    ),
                }
            }
        )
    dynamodb.transact_write_items(TransactItems=actions)

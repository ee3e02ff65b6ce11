"""Reading what the functions wrote, and a spot placement as the scheduler would make it."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from reservations.kernel.api_keys import APIKEY_SK, apikey_item, apikey_pk
from reservations.kernel.auth import hash_key
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.caller import ApiKey
from reservations.nodes.table.keys import (
    RESERVATION_PREFIX,
    UNIT_PREFIX,
    WORKLOAD_PREFIX,
    node_events_pk,
    node_history_pk,
    node_pk,
    reservation_history_key,
)

TABLE = "ReservationsTable"


def item(dynamodb: Any, node_id: str, sort_key: str) -> dict[str, Any] | None:
    response = dynamodb.get_item(
        TableName=TABLE, Key=to_attributes({"PK": node_pk(node_id), "SK": sort_key})
    )
    return from_attributes(response["Item"]) if "Item" in response else None


def partition(dynamodb: Any, node_id: str) -> list[dict[str, Any]]:
    """Every item of the node's partition, in sort key order."""
    pages = dynamodb.get_paginator("query").paginate(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues=to_attributes({":pk": node_pk(node_id)}),
        ConsistentRead=True,
    )
    return [from_attributes(i) for page in pages for i in page["Items"]]


def workload(dynamodb: Any, node_id: str, workload_id: str) -> dict[str, Any]:
    found = item(dynamodb, node_id, WORKLOAD_PREFIX + workload_id)
    assert found is not None
    return found


def reservation(dynamodb: Any, node_id: str, reservation_id: str) -> dict[str, Any]:
    """The reservation as stored: in the node's partition, or else in its history."""
    found = item(dynamodb, node_id, RESERVATION_PREFIX + reservation_id)
    found = found or history_reservation(dynamodb, node_id, reservation_id)
    assert found is not None
    return found


def history_reservation(dynamodb: Any, node_id: str, reservation_id: str) -> dict[str, Any] | None:
    """The reservation in the node's history (``NODEHIST#``), if it is there."""
    key = reservation_history_key(node_id, reservation_id)
    response = dynamodb.get_item(TableName=TABLE, Key=to_attributes(key), ConsistentRead=True)
    return from_attributes(response["Item"]) if "Item" in response else None


def history(dynamodb: Any, node_id: str) -> list[dict[str, Any]]:
    """Every item of the node's history partition, in sort key order."""
    pages = dynamodb.get_paginator("query").paginate(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues=to_attributes({":pk": node_history_pk(node_id)}),
        ConsistentRead=True,
    )
    return [from_attributes(i) for page in pages for i in page["Items"]]


def unit(dynamodb: Any, node_id: str, unit_id: str) -> dict[str, Any]:
    found = item(dynamodb, node_id, UNIT_PREFIX + unit_id)
    assert found is not None
    return found


def events(
    dynamodb: Any, node_id: str, subject: str | None = None, event_type: str | None = None
) -> list[dict[str, Any]]:
    """The node feed's events (as envelopes, in feed order), of one subject
    (``reservations/<id>``, ``workloads/<id>``, ``nodes/<id>``) or type if given."""
    pages = dynamodb.get_paginator("query").paginate(
        TableName=TABLE,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues=to_attributes({":pk": node_events_pk(node_id)}),
        ConsistentRead=True,
    )
    envelopes = [json.loads(from_attributes(i)["event"]) for page in pages for i in page["Items"]]
    return [
        e for e in envelopes if subject in (None, e["subject"]) and event_type in (None, e["type"])
    ]


def reservation_events(dynamodb: Any, node_id: str, reservation_id: str) -> list[dict[str, Any]]:
    return events(dynamodb, node_id, f"reservations/{reservation_id}")


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
    """What the spot scheduler does: claim free units (bumping their version), count the
    placement on the node item, and add the workload, in one transaction."""
    actions: list[dict[str, Any]] = [
        {
            "Update": {
                "TableName": TABLE,
                "Key": to_attributes({"PK": node_pk(node_id), "SK": "#NODE"}),
                "UpdateExpression": "ADD placements :one",
                "ExpressionAttributeValues": to_attributes({":one": 1}),
            }
        },
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
        },
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


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def set_reservation_status(dynamodb: Any, node_id: str, reservation_id: str, status: str) -> None:
    dynamodb.update_item(
        TableName=TABLE,
        Key=to_attributes({"PK": node_pk(node_id), "SK": RESERVATION_PREFIX + reservation_id}),
        UpdateExpression="SET #s = :s, version = version + :one",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=to_attributes({":s": status, ":one": 1}),
    )


def put_api_key(
    dynamodb: Any,
    secret: str,
    *,
    key_id: str,
    org_id: str,
    permissions: tuple[str, ...] = ("reservation.read", "reservation.capacity"),
) -> None:
    """An API key item as the key command writes it (only the hash of ``secret``)."""
    api_key = ApiKey(key_id, org_id, frozenset(permissions), platform_operator=False)
    dynamodb.put_item(TableName=TABLE, Item=to_attributes(apikey_item(hash_key(secret), api_key)))


def set_api_key_permissions(dynamodb: Any, secret: str, permissions: list[str]) -> None:
    dynamodb.update_item(
        TableName=TABLE,
        Key=to_attributes({"PK": apikey_pk(hash_key(secret)), "SK": APIKEY_SK}),
        UpdateExpression="SET #p = :p",
        ExpressionAttributeNames={"#p": "permissions"},
        ExpressionAttributeValues=to_attributes({":p": permissions}),
    )

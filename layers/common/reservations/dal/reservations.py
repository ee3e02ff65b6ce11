"""Reservations read and made: one reservation (one BatchGetItem), a page of a node's
reservations (one Query), and a create's conditional transaction."""

from __future__ import annotations

from typing import Any

from reservations.config import settings
from reservations.dal import clients
from reservations.dal.idempotency import record_put
from reservations.dal.items import (
    ACCESS_SK,
    NODE_SK,
    RESERVATION_PREFIX,
    Item,
    access_from_item,
    access_key,
    create_audit_item,
    from_attributes,
    node_from_item,
    node_key,
    node_pk,
    reservation_from_item,
    reservation_item,
    reservation_key,
    to_attributes,
    unit_key,
)
from reservations.dal.transactions import commit
from reservations.models.domain import ListAccess, Node, Reservation, ReservationsRead
from reservations.models.idempotency import AnswerRecord
from reservations.models.writes import ReservationCreate

Action = dict[str, Any]


def load_reservation(node_id: str, reservation_id: str) -> tuple[Node | None, Reservation | None]:
    """The node and one of its reservations, strongly consistent, in one request."""
    table = settings().table_name
    keys = [
        to_attributes(node_key(node_id)),
        to_attributes(reservation_key(node_id, reservation_id)),
    ]
    items: list[Item] = []
    request: dict[str, Any] = {table: {"Keys": keys, "ConsistentRead": True}}
    while request:  # unprocessed keys only under throttling: ask again for those
        response = clients.dynamodb().batch_get_item(RequestItems=request)
        items.extend(from_attributes(i) for i in response["Responses"].get(table, []))
        request = response.get("UnprocessedKeys") or {}
    node = next((node_from_item(i) for i in items if i["SK"] == NODE_SK), None)
    reservation = next((reservation_from_item(i) for i in items if i["SK"] != NODE_SK), None)
    return node, reservation


def reservation_page(node_id: str, after: str | None) -> ReservationsRead:
    """One Query: the node's reservations by id (or those after ``after``) up to its list
    access item, which sorts last in the partition, so the page reads it whatever the
    cursor: who may list, and the unit generations the page's statuses are derived from.
    Only when the Query stops at its 1 MB before reaching it is it read on its own (one
    GetItem more).

    No Limit: the page takes what one Query returns, and the caller filters. Units and live
    workloads sort between the two and are read too (as many as the node has now).
    """
    query: dict[str, Any] = {
        "TableName": settings().table_name,
        "KeyConditionExpression": "PK = :pk AND SK BETWEEN :first AND :access",
        "ExpressionAttributeValues": to_attributes(
            {":pk": node_pk(node_id), ":first": RESERVATION_PREFIX, ":access": ACCESS_SK}
        ),
        "ConsistentRead": True,
    }
    if after is not None:
        query["ExclusiveStartKey"] = to_attributes(reservation_key(node_id, after))
    page = clients.dynamodb().query(**query)
    items = [from_attributes(attributes) for attributes in page["Items"]]
    access = next((access_from_item(i) for i in items if i["SK"] == ACCESS_SK), None)
    stopped_at = page.get("LastEvaluatedKey", {}).get("SK", {}).get("S")
    if access is None and stopped_at is not None:
        access = _list_access(node_id)
    return ReservationsRead(
        access=access,
        reservations=tuple(
            reservation_from_item(i) for i in items if i["SK"].startswith(RESERVATION_PREFIX)
        ),
        more=stopped_at is not None and stopped_at.startswith(RESERVATION_PREFIX),
    )


def _list_access(node_id: str) -> ListAccess | None:
    response = clients.dynamodb().get_item(
        TableName=settings().table_name,
        Key=to_attributes(access_key(node_id)),
        ConsistentRead=True,
    )
    item = response.get("Item")
    return access_from_item(from_attributes(item)) if item else None


def commit_create(write: ReservationCreate, answer: AnswerRecord | None = None) -> None:
    """The reservation, the node's version bump, the unit checks and the audit record, all
    or nothing; :class:`WriteConflict` when anything changed since the read."""
    actions = create_transaction(write)
    record_at = None
    if answer is not None:
        record_at = len(actions)
        actions.append(record_put(answer))
    commit(actions, token=write.reservation.id, record_at=record_at)


def create_transaction(write: ReservationCreate) -> list[Action]:
    """TransactWriteItems for ``write``: conditioned on the node and every unit read."""
    table = settings().table_name
    node_id = write.reservation.node_id
    return [
        _node_bump(write),
        _access_update(write),
        *(_version_check(table, unit_key(node_id, unit.id), unit.version) for unit in write.units),
        _put_new(table, reservation_item(write.reservation)),
        _put_new(table, create_audit_item(write)),
    ]


def _node_bump(write: ReservationCreate) -> Action:
    """Two creates on one node serialize here: the second finds the version moved."""
    return {
        "Update": {
            "TableName": settings().table_name,
            "Key": to_attributes(node_key(write.reservation.node_id)),
            "UpdateExpression": "SET version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes({":one": 1, ":v": write.node.version}),
        }
    }


def _access_update(write: ReservationCreate) -> Action:
    """The orgs the new reservation names join the node's list access (a set: adding one
    twice is adding it once), beside the owner the node bump conditions on."""
    reservation = write.reservation
    named = {*reservation.allowed_org_ids, *reservation.managing_org_ids}
    return {
        "Update": {
            "TableName": settings().table_name,
            "Key": to_attributes(access_key(reservation.node_id)),
            "UpdateExpression": "SET ownerOrgId = :owner, "
            "version = if_not_exists(version, :zero) + :one ADD namedOrgIds :named",
            "ExpressionAttributeValues": to_attributes(
                {":owner": write.owner_org_id, ":zero": 0, ":one": 1, ":named": named}
            ),
        }
    }


def _version_check(table: str, key: Item, version: int) -> Action:
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": to_attributes(key),
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": {":v": {"N": str(version)}},
        }
    }


def _put_new(table: str, item: Item) -> Action:
    return {
        "Put": {
            "TableName": table,
            "Item": to_attributes(item),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
    }

"""The fleet index in the table: written from the table's stream (``FleetIndexer``), read a
page at a time (``FleetIndexTable``).

Writes are idempotent and never go back: an entry is put only over one written from the
same or an older version of its reservation, and deleted only when still at the version
the change removed it from, so a record applied twice, or an older one after a newer,
changes nothing that a newer one wrote. An entry keeps the GPU models of its
reservation's units as the node has them; a node whose owner or topology changed has its
reservations, live and in its history, indexed again as the node is now (its old owner's
entries go, the models follow the new units)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import table
from reservations.kernel.aws.codec import Item, from_attributes, to_attributes
from reservations.kernel.aws.queries import batch_get, get_item, query_items
from reservations.lifecycle.rules.fleet import (
    FLEET_NODES,
    FLEET_PLATFORM,
    Entry,
    EntryFilter,
    EntryKey,
    IndexChange,
    Range,
    fleet_pk,
    index_change,
    index_entries,
    node_entry_changes,
)
from reservations.nodes import (
    NODE_HISTORY_PREFIX,
    RESERVATION_PREFIX,
    UNIT_PREFIX,
    Node,
    Reservation,
    Unit,
    changed_since_sold,
    node_from_item,
    node_id_of,
    node_key,
    node_pk,
    reservation_from_item,
    reservation_history_key,
    reservation_key,
    unit_from_item,
    unit_key,
)

NODE_SK = "#NODE"  # the node item's sort key
# BatchGetItem takes at most 100 keys.
BATCH_KEYS = 100


def _conditional(call: Any, **request: Any) -> bool:
    """One conditional write; False when its condition did not hold (a newer write won)."""
    try:
        call(TableName=table(), **request)
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False
    return True


def apply_change(change: IndexChange) -> int:
    """The change's puts and deletes, each conditioned on versions; how many were applied."""
    dynamodb, applied = clients.dynamodb(), 0
    for entry in change.puts:
        applied += _conditional(
            dynamodb.put_item,
            Item=to_attributes(entry),
            ConditionExpression="attribute_not_exists(PK) OR version <= :v",
            ExpressionAttributeValues=to_attributes({":v": entry["version"]}),
        )
    for (pk, sk), version in change.deletes:
        applied += _conditional(
            dynamodb.delete_item,
            Key=to_attributes({"PK": pk, "SK": sk}),
            ConditionExpression="version <= :v",
            ExpressionAttributeValues=to_attributes({":v": version}),
        )
    return applied


def _image(record: Mapping[str, Any], name: str) -> Item | None:
    image = record.get("dynamodb", {}).get(name)
    return from_attributes(image) if image else None


def _is_reservation(keys: Item) -> bool:
    pk, sk = str(keys.get("PK", "")), str(keys.get("SK", ""))
    return sk.startswith(RESERVATION_PREFIX) and (
        pk.startswith("NODE#") or pk.startswith(NODE_HISTORY_PREFIX)
    )


@dataclass(frozen=True)
class NodeNow:
    """What a node's entries take from the node as it is now: its owner, its units' GPU
    models (unit id to model; a unit item the node no longer lists is left out), and the
    generation each unit last changed at (a reservation sold before is under review)."""

    owner: str | None
    models: dict[str, str]
    unit_changed_at: Mapping[str, int] | None = None

    def entries(
        self, image: Item | None, owner: str | None, models: bool = True
    ) -> dict[EntryKey, Entry]:
        """The image's entries for the node as it is now (``owner`` may be one it had
        before; without ``models``, as entries that keep none were written)."""
        review = image is not None and changed_since_sold(reservation_from_item(image), self)
        return index_entries(image, owner, self.models if models else None, review)


def read_node_now(node_id: str) -> NodeNow:
    """The node's item and its unit items: one GetItem and one Query."""
    item = get_item(node_key(node_id))
    if item is None:
        return NodeNow(None, {})
    node = node_from_item(item)
    query = {
        "TableName": table(),
        "KeyConditionExpression": "PK = :pk AND begins_with(SK, :unit)",
        "ExpressionAttributeValues": to_attributes({":pk": node_pk(node_id), ":unit": UNIT_PREFIX}),
    }
    listed = node.unit_changed_at
    units = (unit_from_item(i) for i in query_items(query))
    models = {u.id: u.gpu_model_id for u in units if listed is None or u.id in listed}
    return NodeNow(node.owner_org_id, models, node.unit_changed_at)


# What a node item's change must change in its reservations' entries.
NODE_FIELDS_INDEXED = ("ownerOrgId", "topologyGen")


def _index_node(node_id: str, owner_before: str | None, owner_after: str | None) -> int:
    """The node's entries in its owner's and the operator's node lists (a node registered
    or loaded, or sold to another org): idempotent puts and deletes, none when the owner
    did not change."""
    puts, deletes = node_entry_changes(node_id, owner_before, owner_after)
    dynamodb = clients.dynamodb()
    for pk, sk in puts:
        dynamodb.put_item(TableName=table(), Item=to_attributes({"PK": pk, "SK": sk}))
    for pk, sk in deletes:
        dynamodb.delete_item(TableName=table(), Key=to_attributes({"PK": pk, "SK": sk}))
    return len(puts) + len(deletes)


class FleetIndexer:
    """Applies a batch of the table's stream records to the fleet index."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeNow] = {}

    def node(self, node_id: str) -> NodeNow:
        """The node as it is now (read once per node per batch)."""
        if node_id not in self._nodes:
            self._nodes[node_id] = read_node_now(node_id)
        return self._nodes[node_id]

    def apply(self, record: Mapping[str, Any]) -> int:
        """One stream record: a reservation's change, or a node's new owner or topology."""
        keys = from_attributes(record.get("dynamodb", {}).get("Keys", {}))
        old, new = _image(record, "OldImage"), _image(record, "NewImage")
        if _is_reservation(keys):
            node_id = str((new or old or {}).get("nodeId", ""))
            node = self.node(node_id) if node_id else NodeNow(None, {})
            before = node.entries(old, node.owner)
            after = node.entries(new, node.owner)
            current = get_item({"PK": keys["PK"], "SK": keys["SK"]})
            if current is None or new is None or current.get("version") != new.get("version"):
                # Not the newest image (a record applied again or late, or the item is
                # gone): the index follows the item as it is now, whatever this said.
                now = node.entries(current, node.owner)
                gone = {k: e for k, e in {**before, **after}.items() if k not in now}
                return apply_change(
                    IndexChange(tuple(now.values()), index_change(gone, {}).deletes)
                )
            return apply_change(index_change(before, after))
        applied = 0
        sold_by = (old or {}).get("ownerOrgId")
        if keys.get("SK") == NODE_SK and new and sold_by != new.get("ownerOrgId"):
            # Registered, loaded or sold: listed under its owner as the node is now, not as
            # this record says (one applied late must not list it under a former owner).
            self._nodes.pop(str(new["id"]), None)
            owner = self.node(str(new["id"])).owner
            applied = _index_node(str(new["id"]), str(sold_by) if sold_by else None, owner)
        changed = old and new and any(old.get(f) != new.get(f) for f in NODE_FIELDS_INDEXED)
        if keys.get("SK") == NODE_SK and old and new and changed:
            node_id = str(new["id"])
            self._nodes.pop(node_id, None)  # read again: as it is after this change
            units_changed = old.get("topologyGen") != new.get("topologyGen")
            as_now = self.node(node_id)
            reindexed = self.reindex(node_id, str(old.get("ownerOrgId")), as_now, units_changed)
            return applied + reindexed
        return applied

    def reindex(self, node_id: str, before: str, now: NodeNow, units_changed: bool) -> int:
        """Every reservation of the node, live and in its history, indexed again for the
        node as it is now: its owner's entries instead of the old owner's, and after a
        topology change every entry with the models and reviews its units make now."""
        applied = 0
        for partition in (node_pk(node_id), NODE_HISTORY_PREFIX + node_id):
            query = {
                "TableName": table(),
                "KeyConditionExpression": "PK = :pk AND begins_with(SK, :res)",
                "ExpressionAttributeValues": to_attributes(
                    {":pk": partition, ":res": RESERVATION_PREFIX}
                ),
            }
            for image in query_items(query):
                was = now.entries(image, before, models=not units_changed)
                becomes = now.entries(image, now.owner)
                applied += apply_change(index_change(was, becomes))
        return applied


@dataclass(frozen=True)
class EntriesRead:
    """A Query of one index range: the entries it returned in order, and the sort key of
    the last one it read when it stopped early (None: it read to the range's end). With a
    filter, that entry may be one it did not return."""

    entries: tuple[Entry, ...]
    stopped_at: str | None


@dataclass(frozen=True)
class Found:
    """What a page's entries point at, read strongly consistent: each reservation at the
    place its entry names (by entry key), and the nodes."""

    reservations: dict[EntryKey, Reservation]
    nodes: dict[str, Node]


def _chunks(keys: list[Item]) -> Iterable[list[Item]]:
    for start in range(0, len(keys), BATCH_KEYS):
        yield keys[start : start + BATCH_KEYS]


class FleetIndexTable:
    """The fleet list's reads: a Query of an index range, then the reservations and nodes
    its entries name (BatchGetItem, 100 keys a request)."""

    def entries(self, where: Range, limit: int, only: EntryFilter | None) -> EntriesRead:
        """At most ``limit`` entries of the range read, those ``only`` lets through
        returned."""
        values = {":pk": where.pk, ":low": where.low, ":high": where.high}
        query: dict[str, Any] = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :low AND :high",
            "Limit": limit,
        }
        if only is not None:
            query["FilterExpression"] = only.expression
            query["ExpressionAttributeNames"] = only.names
            values.update(only.values)
        query["ExpressionAttributeValues"] = to_attributes(values)
        page = clients.dynamodb().query(**query)
        entries = tuple(from_attributes(i) for i in page["Items"])
        last = page.get("LastEvaluatedKey")
        return EntriesRead(entries, str(from_attributes(last)["SK"]) if last else None)

    def read(self, entries: list[Entry]) -> Found:
        """The reservations the entries name (each where its entry says) and their nodes,
        in ``ceil((entries + nodes) / 100)`` requests."""
        places = {
            (e["PK"], e["SK"]): (
                reservation_history_key(e["nodeId"], e["reservationId"])
                if e["liveness"] == "ended"
                else reservation_key(e["nodeId"], e["reservationId"])
            )
            for e in entries
        }
        nodes = sorted({str(e["nodeId"]) for e in entries})
        keys = [*places.values(), *(node_key(n) for n in nodes)]
        items = [item for chunk in _chunks(keys) for item in batch_get(chunk)]
        by_key = {(i["PK"], i["SK"]): i for i in items}
        found_nodes = {
            node.id: node for node in (node_from_item(i) for i in items if i["SK"] == NODE_SK)
        }
        reservations = {
            entry_key: reservation_from_item(by_key[(k["PK"], k["SK"])])
            for entry_key, k in places.items()
            if (k["PK"], k["SK"]) in by_key
        }
        return Found(reservations, found_nodes)

    def entry_nodes(self, where: Range) -> Iterator[str]:
        """The node of each entry of the range (its ``nodeId`` alone projected), Query after
        Query."""
        values = {":pk": where.pk, ":low": where.low, ":high": where.high}
        query = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk AND SK BETWEEN :low AND :high",
            "ProjectionExpression": "nodeId",
            "ExpressionAttributeValues": to_attributes(values),
        }
        return (str(item["nodeId"]) for item in query_items(query))

    def owned_nodes(self, org_id: str | None, from_node: str = "") -> Iterator[str]:
        """The ids of the nodes ``org_id`` owns (None: every node), in id order from
        ``from_node`` on, a Query page (1 MB) read only when the one before is used up."""
        pk = fleet_pk(FLEET_PLATFORM if org_id is None else org_id, FLEET_NODES)
        values = {":pk": pk, **({":from": from_node} if from_node else {})}
        query = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk" + (" AND SK >= :from" if from_node else ""),
            "ExpressionAttributeValues": to_attributes(values),
        }
        return (str(item["SK"]) for item in query_items(query))

    def units(self, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], Unit]:
        """The unit items (node, unit) asked for (for a filter by GPU model)."""
        keys = [unit_key(node, unit) for node, unit in sorted(wanted)]
        items = [item for chunk in _chunks(keys) for item in batch_get(chunk)]
        return {(node_id_of(i["PK"]), i["id"]): unit_from_item(i) for i in items}

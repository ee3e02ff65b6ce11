"""The reservations table behind the logic's node store: a node's partition read, every write
on it committed as one TransactWriteItems, and the Idempotency-Key's records; and the API
key lookup.

Every write goes through :meth:`NodeTable.commit`: its own actions (each write type's
:class:`Writer`, which its slice's table declares and its wiring hands the table), what every
write puts beside them (``records.written_with``: its events), then the key's record.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from reservations.kernel.aws import clients, transactions
from reservations.kernel.aws.actions import MAX_ACTIONS, Action, table
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.aws.event_items import rewrite_late
from reservations.kernel.aws.queries import batch_get, get_item, query_items
from reservations.kernel.idempotency import table as idempotency
from reservations.kernel.idempotency.models import AnswerRecord, StoredResponse
from reservations.kernel.times import format_event_time, format_time
from reservations.nodes.models.partition import (
    ListAccess,
    Node,
    NodeSnapshot,
    Reservation,
    ReservationsRead,
)
from reservations.nodes.models.writes import PartitionWrite
from reservations.nodes.table.access import prune_named
from reservations.nodes.table.items import (
    access_from_item,
    node_from_item,
    reservation_from_item,
    snapshot_from_items,
)
from reservations.nodes.table.keys import (
    ACCESS_SK,
    CLOCK_AT,
    CLOCK_INDEX,
    CLOCK_SHARD,
    LEND_AT,
    LEND_SHARD,
    LENDING_INDEX,
    LIST_PK,
    LIVE,
    LIVE_ENDS,
    LIVE_ENDS_INDEX,
    NODE_RESERVATIONS_INDEX,
    NODE_SK,
    RESERVATION_PREFIX,
    access_key,
    node_id_of,
    node_key,
    node_pk,
    reservation_history_key,
    reservation_key,
)
from reservations.nodes.table.queries import up_to_access
from reservations.nodes.table.records import written_with

W = TypeVar("W", bound=PartitionWrite)


def write_id(write: Any) -> str | None:
    """The write's own id, its ClientRequestToken: a retry of a request whose answer was
    lost is then DynamoDB's to recognise, not a lost race."""
    return str(write.write_id)


def no_token(_write: Any) -> str | None:
    """No ClientRequestToken: for a write retried under the same id with other versions,
    which DynamoDB would refuse as a token reused with other parameters."""
    return None


@dataclass(frozen=True)
class Writer(Generic[W]):
    """How one type of write on a node's partition is committed: its own actions,
    conditioned on what it was decided from, in at most ``room`` (a node update's unit
    deletes fill it; any other takes what it needs), and its ClientRequestToken."""

    kind: type[W]
    actions: Callable[[W, int], list[Action]]
    token: Callable[[W], str | None] = write_id

    @classmethod
    def sized(
        cls,
        kind: type[W],
        actions: Callable[[W], list[Action]],
        token: Callable[[W], str | None] | None = write_id,
    ) -> Writer[W]:
        """A write whose actions are as many as it needs, whatever the room; ``token`` None:
        committed without a ClientRequestToken (:func:`no_token`)."""
        return cls(kind, lambda write, _room: actions(write), token or no_token)


# What a page of a list with history reads: the largest page (100) plus one item, so a full
# page knows there is more, whatever the page's own ``limit``: an org that sees few of a
# node's reservations still finds them in a few pages.
HISTORY_WINDOW = 100
# Reservations read by id in one BatchGetItem: each is two keys (live, history) of its 100.
BATCH_IDS = 50


class NodeTable:
    """Node partitions and the writes on them, each type of write committed by its
    :class:`Writer` (a table without the writer of a write refuses to commit it); clients
    are made on first use, not here."""

    def __init__(self, *writers: Writer[Any]) -> None:
        self._writers: dict[type[Any], Writer[Any]] = {writer.kind: writer for writer in writers}

    def load_node(self, node_id: str) -> NodeSnapshot | None:
        """The node's partition up to its list access item (which only the reservation list
        reads), strongly consistent; usually a single Query page."""
        query: dict[str, Any] = {
            "TableName": table(),
            "KeyConditionExpression": "PK = :pk AND SK < :access",
            "ExpressionAttributeValues": to_attributes(
                {":pk": node_pk(node_id), ":access": ACCESS_SK}
            ),
            "ConsistentRead": True,
        }
        return snapshot_from_items(list(query_items(query)))

    def load_reservation(
        self, node_id: str, reservation_id: str
    ) -> tuple[Node | None, Reservation | None]:
        """The node and one of its reservations, live or in the node's history, strongly
        consistent, in one request whatever the history's size (the live one when a move
        is caught between the two: both say the same)."""
        keys = [
            node_key(node_id),
            reservation_key(node_id, reservation_id),
            reservation_history_key(node_id, reservation_id),
        ]
        items = batch_get(keys)
        node = next((node_from_item(i) for i in items if i["SK"] == NODE_SK), None)
        found = sorted(
            (i for i in items if i["SK"] != NODE_SK), key=lambda i: i["PK"] != node_pk(node_id)
        )
        return node, next((reservation_from_item(i) for i in found), None)

    def load_reservations(
        self, node_id: str, reservation_ids: Collection[str]
    ) -> list[Reservation]:
        """Those of the node's reservations that are there, live or in its history, in id
        order: a BatchGetItem of each one's two keys, 50 ids at a time (the live one when a
        move is caught with both). A BatchGetItem reads each item on its own, not isolated
        from a move's transaction, so a reservation caught moving can be in neither: the ids
        not found are read once more, which sees the move committed."""
        ids = sorted(set(reservation_ids))
        found = self._by_id(node_id, ids)
        missing = [reservation_id for reservation_id in ids if reservation_id not in found]
        if missing:
            found |= self._by_id(node_id, missing)
        return [found[key] for key in sorted(found)]

    def _by_id(self, node_id: str, ids: list[str]) -> dict[str, Reservation]:
        found: dict[str, Reservation] = {}
        for start in range(0, len(ids), BATCH_IDS):
            keys = [key for reservation_id in ids[start : start + BATCH_IDS]
                    for key in (reservation_key(node_id, reservation_id),
                                reservation_history_key(node_id, reservation_id))]  # fmt: skip
            live_first = sorted(batch_get(keys), key=lambda i: i["PK"] != node_pk(node_id))
            for item in live_first:
                found.setdefault(item["id"], reservation_from_item(item))
        return found

    def list_access(self, node_id: str) -> ListAccess | None:
        """The node's list access alone: one GetItem."""
        return self._list_access(node_id)

    def load_ended(self, node_id: str, reservation_id: str) -> Reservation | None:
        """One reservation of the node's history (one GetItem): what a write on a
        reservation that is not in the node's partition reads, to tell ended from unknown."""
        item = get_item(reservation_history_key(node_id, reservation_id))
        return reservation_from_item(item) if item else None

    def due_moves(self, now: datetime) -> Iterator[Reservation]:
        """Reservations in node partitions past their ``endsAt`` (the sparse index of live
        reservations' ends, oldest first; eventually consistent, so a move conditions on
        the version it lists)."""
        query: dict[str, Any] = {
            "TableName": table(),
            "IndexName": LIVE_ENDS_INDEX,
            "KeyConditionExpression": f"{LIVE_ENDS} = :live AND endsAt <= :now",
            "ExpressionAttributeValues": to_attributes({":live": LIVE, ":now": format_time(now)}),
        }
        yield from (reservation_from_item(i) for i in query_items(query))

    def due_clock(self, shard: str, due_by: str, page: int) -> list[tuple[str, str]]:
        """One Query of the clock index's partition ``shard`` (keys only): up to ``page``
        reservations, as (node id, reservation id), whose next moment (``clockAt``) is at
        ``due_by`` or before, oldest first. What it reads is what is due, never the fleet or
        its past."""
        query: dict[str, Any] = {
            "TableName": table(),
            "IndexName": CLOCK_INDEX,
            "KeyConditionExpression": f"{CLOCK_SHARD} = :shard AND {CLOCK_AT} <= :now",
            "ExpressionAttributeValues": to_attributes({":shard": shard, ":now": due_by}),
            "Limit": page,
        }
        items = clients.dynamodb().query(**query)["Items"]
        keys = [from_attributes(i) for i in items]
        return [(node_id_of(k["PK"]), k["SK"].removeprefix(RESERVATION_PREFIX)) for k in keys]

    def due_lending(self, shard: str, due_by: datetime, page: int) -> list[tuple[str, str]]:
        """One Query of the lending index's partition ``shard`` (keys only): up to ``page``
        reservations, as (node id, reservation id), whose ``lendAt`` is at ``due_by`` or
        before, oldest first. What it reads is what is due, never the fleet."""
        query: dict[str, Any] = {
            "TableName": table(),
            "IndexName": LENDING_INDEX,
            "KeyConditionExpression": f"{LEND_SHARD} = :shard AND {LEND_AT} <= :now",
            "ExpressionAttributeValues": to_attributes(
                {":shard": shard, ":now": format_event_time(due_by)}
            ),
            "Limit": page,
        }
        items = clients.dynamodb().query(**query)["Items"]
        keys = [from_attributes(i) for i in items]
        return [(node_id_of(k["PK"]), k["SK"].removeprefix(RESERVATION_PREFIX)) for k in keys]

    def prune_named(self, node_id: str, now: datetime) -> int:
        """The orgs the node's list access names no more at ``now`` taken out (how many)."""
        return prune_named(node_id, now)

    def reservation_page(
        self, node_id: str, after: str | None, history: bool = False, limit: int | None = 100
    ) -> ReservationsRead:
        """A page of the node's partition, or with ``history`` of the index holding its
        live reservations and its history (:meth:`_history_page`).

        One Query: the node's reservations by id (or those after ``after``) up to its list
        access item, which sorts last in the partition, so the page reads it whatever the
        cursor: who may list, and the unit generations the page's statuses are derived from.
        Only when the Query stops at its 1 MB before reaching it is it read on its own (one
        GetItem more).

        No Limit: the page takes what one Query returns, and the caller filters. Units and
        live workloads sort between the two and are read too (as many as the node has now).
        """
        if history:
            return self._history_page(node_id, after, limit)
        query = up_to_access(node_id, RESERVATION_PREFIX)
        if after is not None:
            query["ExclusiveStartKey"] = to_attributes(reservation_key(node_id, after))
        return self._page(node_id, clients.dynamodb().query(**query))

    def _history_page(self, node_id: str, after: str | None, limit: int | None) -> ReservationsRead:
        """One Query of the node's list index: its reservations, live and history alike,
        by id after ``after``, up to its list access item, which the index holds too and
        sorts last. A reservation keeps its place there when it moves, so no page loses or
        repeats one. An index is read eventually consistent; a move caught half-way shows
        both items, the same reservation once (the live one).

        At most ``HISTORY_WINDOW`` + 1 items (``Limit``): what a page reads stays the same
        however long the node's past; with ``limit`` None (a caller that sees only the
        reservations naming its org), as many as the Query's 1 MB holds, so that its one
        reservation behind hundreds of others' is on its first page. A page that stops
        before the access item reads it on its own (one GetItem)."""
        # Just after ``after``'s sort key: "!" sorts below every character an id may have.
        first = RESERVATION_PREFIX if after is None else f"{RESERVATION_PREFIX}{after}!"
        query: dict[str, Any] = {
            "TableName": table(),
            "IndexName": NODE_RESERVATIONS_INDEX,
            "KeyConditionExpression": f"{LIST_PK} = :pk AND SK BETWEEN :first AND :access",
            "ExpressionAttributeValues": to_attributes(
                {":pk": node_pk(node_id), ":first": first, ":access": ACCESS_SK}
            ),
        }
        if limit is not None:
            query["Limit"] = max(limit, HISTORY_WINDOW) + 1
        return self._page(node_id, clients.dynamodb().query(**query))

    def _page(self, node_id: str, page: dict[str, Any]) -> ReservationsRead:
        items = [from_attributes(attributes) for attributes in page["Items"]]
        access = next((access_from_item(i) for i in items if i["SK"] == ACCESS_SK), None)
        stopped_at = page.get("LastEvaluatedKey", {}).get("SK", {}).get("S")
        if access is None and stopped_at is not None:
            access = self._list_access(node_id)
        by_id = {  # a move caught half-way (an index): the live item wins
            i["id"]: reservation_from_item(i)
            for i in sorted(items, key=lambda i: i["PK"] == node_pk(node_id))
            if i["SK"].startswith(RESERVATION_PREFIX)
        }
        return ReservationsRead(
            access=access,
            reservations=tuple(by_id[key] for key in sorted(by_id)),
            more=stopped_at is not None and stopped_at.startswith(RESERVATION_PREFIX),
        )

    def _list_access(self, node_id: str) -> ListAccess | None:
        item = get_item(access_key(node_id))
        return access_from_item(item) if item else None

    def commit(self, write: PartitionWrite, answer: AnswerRecord | None = None) -> None:
        """The write all or nothing, with the key's record (``answer``) when there is one;
        :class:`WriteConflict` when anything it was decided from changed (carrying the
        live record that stood in the way, if that is what did)."""
        own, records = self._actions(write, MAX_ACTIONS - (answer is not None))
        transactions.run_answered(own + records, self._writer(write).token(write), answer)
        rewrite_late(records)  # its events, where the write took a feed's settle window

    def transaction(self, write: PartitionWrite, room: int = MAX_ACTIONS) -> list[Action]:
        """The write as TransactWriteItems actions, in at most ``room``: its own, then what
        every write puts beside them (``records.written_with``: its events), which take
        their room from a node update's unit deletes."""
        own, records = self._actions(write, room)
        return own + records

    def _actions(self, write: PartitionWrite, room: int) -> tuple[list[Action], list[Action]]:
        """The write's own actions, and its records, which take their room first."""
        records = written_with(write)
        return self._writer(write).actions(write, room - len(records)), records

    def _writer(self, write: PartitionWrite) -> Writer[Any]:
        writer = self._writers.get(type(write))
        if writer is None:
            raise TypeError(f"this table has no writer of {type(write).__name__}")
        return writer

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        return idempotency.keep_answer(answer)

    def stored_answer(self, scope: str) -> StoredResponse | None:
        return idempotency.stored_answer(scope)

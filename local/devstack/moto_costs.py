"""moto's writes, made to cost what they touch.

moto checks an item's size (400 KB) by adding up all its attributes again for each one it
sets, so writing an item costs the square of its attributes: 10,000 ended reservations took
minutes to load. The size is kept as the attributes are set instead, with the same limit.

moto backs up a transaction by deep-copying the whole table once per action (to restore it
when an action fails), so a write's time grows with everything in the table: with a few
thousand ended reservations in a node's history, every write of the local stack and of the
in-process tests took seconds. This keeps moto's semantics (all or nothing, the same
cancellation reasons) with a backup of only the items the transaction names, and of the
table's stream, restored when moto would restore the table.

And for the emulator, moto's answers written as plain JSON (:func:`plain_answers`).
"""

from __future__ import annotations

import copy
import functools
import json
import types
from typing import Any

from moto.dynamodb import models
from moto.dynamodb import responses as dynamodb_responses
from moto.dynamodb.models import dynamo_type
from moto.dynamodb.models.dynamo_type import DynamoType

_MOTO_ITEM_LIMIT = 405_000  # moto's own: between DynamoDB's measured 409 and 410 KB

_Backup = list[tuple[Any, Any, Any, Any]]  # (table, hash, range, item before or None)


def install() -> None:
    """Patch moto's DynamoDB backend and items, once (idempotent)."""
    _sized_items()
    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_items_only", False):
        return
    # moto's own backup copies tables through this module's ``copy``: keep the table itself.
    models.copy = types.SimpleNamespace(deepcopy=_copy_all_but_tables)  # type: ignore[attr-defined]
    original = backend.transact_write_items

    @functools.wraps(original)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        backup, streams = _backup(self, transact_items), _stream_lengths(self, transact_items)
        try:
            original(self, transact_items)
        except Exception:
            _restore(backup, streams)
            raise

    transact_write_items._items_only = True  # type: ignore[attr-defined]
    backend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def plain_answers() -> None:
    """moto's DynamoDB answers written as plain JSON rather than through its shape-driven
    serializer, which takes seconds for a Query of 1 MB (a page of a list with history on a
    node with thousands of ended reservations: the local API gave up on it). The same JSON
    for what the service stores (no binary values; an answer that has one, which plain JSON
    cannot write, goes through moto's own). For the emulator: the in-process tests keep
    moto's own bytes, which they count."""
    result = dynamodb_responses.DynamoResult
    if getattr(result.execute_result, "_plain", False):
        return
    original = result.execute_result

    def execute_result(self: Any, context: Any) -> Any:
        try:
            body = json.dumps(self.result)
        except TypeError:
            return original(self, context)
        return 200, {"Content-Type": "application/x-amz-json-1.0"}, body

    execute_result._plain = True  # type: ignore[attr-defined]
    execute_result._moto_own = original  # type: ignore[attr-defined]
    result.execute_result = execute_result  # type: ignore[method-assign]


def _sized_items() -> None:
    """Each attribute's size counted once, as it is set; the sum checked against moto's
    limit as moto checks it."""
    sized = dynamo_type.LimitedSizeDict
    if getattr(sized, "_sized", False):
        return

    def setitem(self: Any, key: str, value: Any) -> None:
        sizes: dict[str, int] = self.__dict__.setdefault("_sizes", {})
        size = dynamo_type.bytesize(key) + (
            value.size() if type(value) is DynamoType else dynamo_type.bytesize(str(value))
        )
        if sum(sizes.values()) - sizes.get(key, 0) + size > _MOTO_ITEM_LIMIT:
            raise dynamo_type.ItemSizeTooLarge
        sizes[key] = size
        dict.__setitem__(self, key, value)

    sized.__setitem__ = setitem  # type: ignore[method-assign]
    sized._sized = True  # type: ignore[attr-defined]


def _copy_all_but_tables(value: Any, memo: Any = None) -> Any:
    if isinstance(value, models.Table):
        return value
    return copy.deepcopy(value, memo)


def _tables(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple[Any, dict[str, Any]]]:
    found = []
    for action in transact_items:
        (operation,) = action.values()
        table = backend.tables.get(operation.get("TableName"))
        if table is not None:
            found.append((table, operation))
    return found


def _backup(backend: Any, transact_items: list[dict[str, Any]]) -> _Backup:
    backup: _Backup = []
    for table, operation in _tables(backend, transact_items):
        key = operation.get("Key") or operation.get("Item") or {}
        if table.hash_key_attr not in key or (table.range_key_attr or "") not in {**key, "": 1}:
            continue  # moto refuses it before writing anything
        hash_value = DynamoType(key[table.hash_key_attr])
        if table.range_key_attr is None:
            before = table.items.get(hash_value)
            backup.append((table, hash_value, None, copy.deepcopy(before)))
            continue
        range_value = DynamoType(key[table.range_key_attr])
        before = table.items.get(hash_value, {}).get(range_value)
        backup.append((table, hash_value, range_value, copy.deepcopy(before)))
    return backup


def _stream_lengths(
    backend: Any, transact_items: list[dict[str, Any]]
) -> dict[int, tuple[Any, int]]:
    lengths = {}
    for table, _ in _tables(backend, transact_items):
        if table.stream_shard is not None:
            lengths[id(table)] = (table.stream_shard, len(table.stream_shard.items))
    return lengths


def _restore(backup: _Backup, streams: dict[int, tuple[Any, int]]) -> None:
    for table, hash_value, range_value, before in reversed(backup):
        if range_value is None:
            table.items.pop(hash_value, None)
            if before is not None:
                table.items[hash_value] = before
            continue
        partition = table.items[hash_value]
        partition.pop(range_value, None)
        if before is not None:
            partition[range_value] = before
        elif not partition:
            del table.items[hash_value]
    for shard, length in streams.values():
        del shard.items[length:]

"""Load a fleet file into DynamoDB: validate the whole file first, then write it.

    reservations-fleet validate FLEET.json
    reservations-fleet load FLEET.json [--endpoint-url URL] [--table NAME] [--region REGION]
                       [--queue-prefix PREFIX] [--dead-letter-queue-arn ARN | --no-queues]
                       [--only-add] [--history-retention-days DAYS]

Loading registers each node: it creates the node's spot-termination queue (FIFO, redriving
to the shared dead-letter queue) and stores its URL on the node's item, replaces the node's
partition (items the file no longer has are deleted; every item written is one version past
the stored one) and puts every API key; stored keys the file no longer has are revoked
unless ``--only-add``. It records ``platformOrgId`` as the table's platform org, the org
whose keys, and no other's, are operator keys. Reservations and workloads are made by
create, release and place where those calls could have made them at load time, and stored
as stated otherwise (``api_rules``; ``validate --explain`` says which and why). Nothing is
written unless the whole file is valid and none of its key ids is another stored key's.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError
from pydantic import ValidationError

from reservations.kernel import api_keys
from reservations.kernel.api_keys import key_id_of, keyid_key
from reservations.kernel.auth import hash_key
from reservations.kernel.aws import codec
from reservations.kernel.aws.batches import sized_batches
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.caller import ApiKey
from reservations.kernel.errors import field_path
from reservations.lifecycle.rules.history import named_orgs_until
from reservations.lifecycle.table.clock import armed_item
from reservations.nodes.models.partition import ListAccess, NodeSnapshot
from reservations.nodes.models.requests import UnitSpec
from reservations.nodes.register import registered_node, reported_units
from reservations.nodes.rules.topology import first_generations
from reservations.nodes.table import items
from reservations.nodes.table import keys as table_keys
from reservations.nodes.table import queue as node_queue
from reservations.usage import table as usage
from reservations_tools import keys
from reservations_tools.fleet.api_rules import BuiltNode, Route, build_node
from reservations_tools.fleet.history import (
    ENDED,
    HistoryNotWritten,
    generated_past,
    history_items,
    is_ended,
    write_history,
)
from reservations_tools.fleet.model import Fleet, FleetApiKey, FleetNode, parse_fleet
from reservations_tools.fleet.size import MAX_ITEM_BYTES, item_size

LOCAL_DEAD_LETTER_QUEUE = "SpotTerminationDeadLetterQueue.fifo"
MAX_TRANSACTION_ITEMS = 100
MAX_TRANSACTION_BYTES = 2 * 1024 * 1024  # half of DynamoDB's 4 MB: sizes are estimates
WRITE_ATTEMPTS = 5
MAX_BATCH_GET_KEYS = 100  # BatchGetItem's limit
READ_ATTEMPTS = 5
READ_BACKOFF_SECONDS = 0.05  # doubled at each attempt
DEFAULT_RETENTION_DAYS = 400  # the stack's HistoryRetentionDays default


class FleetError(Exception):
    """The fleet file cannot be loaded; the message names the field."""


def read_fleet(path: Path) -> Fleet:
    try:
        text = path.read_bytes()
    except OSError as error:
        raise FleetError(f"{path}: cannot read: {error.strerror}") from error
    try:
        return parse_fleet(text)
    except ValidationError as error:
        raise FleetError(f"{path}: invalid fleet file:\n{describe(error)}") from error


def describe(error: ValidationError) -> str:
    """One line per problem, naming the field; never echoes the value (it may be a key)."""
    lines = []
    for problem in error.errors(include_input=False, include_url=False):
        where = field_path(problem["loc"])
        if problem["type"] == "fleet_field":  # a cross-field rule names its field itself
            field = problem["ctx"]["field"]
            joined = field.startswith("[") or not where  # an index, as in ``allowedOrgIds[1]``
            where = f"{where}{field}" if joined else f"{where}.{field}"
        # A validator's own words, without pydantic's "Value error, " before them.
        message = problem["ctx"]["error"] if problem["type"] == "value_error" else problem["msg"]
        lines.append(f"  {where or '(file)'}: {message}")
    return "\n".join(lines)


def build(fleet_node: FleetNode, loaded_at: datetime, queue_url: str | None = None) -> BuiltNode:
    """The node as registration stores it, then its reservations and workloads, each made
    by the API's rules where it could have made them (see ``api_rules``)."""
    specs = [UnitSpec.model_validate(unit.model_dump(by_alias=True)) for unit in fleet_node.units]
    units = reported_units(specs)
    node = registered_node(
        fleet_node.id,
        fleet_node.owner_org_id,
        fleet_node.topology_gen,
        queue_url,
        1,
        loaded_at,
        first_generations(units),
    )
    registered = NodeSnapshot(node, tuple(units))
    return build_node(fleet_node, registered, loaded_at)


def node_items(
    fleet_node: FleetNode,
    loaded_at: datetime,
    queue_url: str | None = None,
    retention_days: int = DEFAULT_RETENTION_DAYS,
) -> list[codec.Item]:
    """The node partition's items for one node of the fleet (each at version 1), then its
    history's. Its list access item follows the node's (so that both land in the first
    transaction): the owner, the orgs the node's reservations name (its history's too: the
    list shows them), each until the latest end of its reservations' retention (none already
    past), and those its workloads run for, exactly, as the file replaces them all,
    and the node's unit generations. Reservations ended at the load (cancelled, expired) and
    the node's made-up past go to the node's history, as the service would have moved them."""
    snapshot = build(fleet_node, loaded_at, queue_url).snapshot
    node, node_id = snapshot.node, snapshot.node.id
    past = generated_past(
        node, fleet_node.units[0].id.lower() if fleet_node.units else "",
        fleet_node.generated_past_reservations, loaded_at,
    )  # fmt: skip
    ended = [r for r in snapshot.reservations if is_ended(r, node, loaded_at)] + past
    live = [r for r in snapshot.reservations if not is_ended(r, node, loaded_at)]
    named = named_orgs_until([*live, *ended], retention_days)
    access = ListAccess(
        node.owner_org_id,
        {org: until for org, until in named.items() if loaded_at < until},
        node.unit_changed_at,
        frozenset(workload.org_id for workload in snapshot.workloads),
    )
    return [
        items.node_item(snapshot.node),
        items.access_item(node_id, access),
        *(items.unit_item(node_id, unit) for unit in snapshot.units),
        *(armed_item(reservation) for reservation in live),
        *(items.workload_item(node_id, workload) for workload in snapshot.workloads),
        *history_items(ended, retention_days),
    ]


def routes(fleet: Fleet, loaded_at: datetime) -> list[Route]:
    """How each reservation and workload of the file is made: by which API rules, or as
    stated and why."""
    return [route for node in fleet.nodes for route in build(node, loaded_at).routes]


def _api_key(fleet: Fleet, fleet_key: FleetApiKey) -> ApiKey:
    return ApiKey(
        key_id=fleet_key.key_id,
        org_id=fleet_key.org_id,
        permissions=frozenset(fleet_key.permissions),
        platform_operator=fleet_key.org_id == fleet.platform_org_id,
        revoked=fleet_key.revoked,
        expires_at=fleet_key.expires_at,
    )


def fleet_items(
    fleet: Fleet,
    loaded_at: datetime,
    queue_urls: dict[str, str] | None = None,
    retention_days: int = DEFAULT_RETENTION_DAYS,
) -> list[codec.Item]:
    """Every item the fleet describes: API keys, then each node's partition and history."""
    result = []
    for fleet_key in fleet.api_keys:
        result.append(api_keys.apikey_item(hash_key(fleet_key.key), _api_key(fleet, fleet_key)))
    for fleet_node in fleet.nodes:
        url = (queue_urls or {}).get(fleet_node.id)
        result.extend(node_items(fleet_node, loaded_at, url, retention_days))
    return result


def _item_name(item: codec.Item) -> str:
    if item["PK"].startswith(api_keys.APIKEY_PREFIX):
        return f"API key {item['keyId']}"
    node_id = table_keys.node_id_of(item["PK"].replace(table_keys.NODE_HISTORY_PREFIX, "NODE#"))
    return f"node {node_id}, item {item['SK']}"


def check_sizes(new_items: list[codec.Item]) -> None:
    """Refuse, before writing anything, an item DynamoDB would refuse (the 400 KB limit)."""
    for item in new_items:
        size = item_size(codec.to_attributes(item))
        if size > MAX_ITEM_BYTES:
            raise FleetError(
                f"{_item_name(item)}: {size} bytes, over DynamoDB's {MAX_ITEM_BYTES}-byte limit"
            )


def check_fleet(fleet: Fleet, loaded_at: datetime) -> None:
    """What the schema alone cannot see: the size of every item as it would be written."""
    check_sizes(fleet_items(fleet, loaded_at))


def _stored_versions(
    client: Any, table: str, node_id: str
) -> tuple[dict[str, int | None], str | None]:
    """Sort key -> version of every item in the node's partition, and when the node was
    first registered (one consistent pass)."""
    stored: dict[str, int | None] = {}
    created_at = None
    for page in client.get_paginator("query").paginate(
        TableName=table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": table_keys.node_pk(node_id)}},
        ProjectionExpression="SK, version, createdAt",
        ConsistentRead=True,
    ):
        for item in page["Items"]:
            version = item.get("version")
            stored[item["SK"]["S"]] = int(version["N"]) if version else None
            if item["SK"]["S"] == table_keys.NODE_SK and "createdAt" in item:
                created_at = item["createdAt"]["S"]
    return stored, created_at


def _as_read(version: int | None, exists: bool = True) -> dict[str, Any]:
    """The condition that the item is still as read: absent, or at ``version``."""
    if not exists:
        return {"ConditionExpression": "attribute_not_exists(PK)"}
    if version is None:
        return {"ConditionExpression": "attribute_exists(PK) AND attribute_not_exists(version)"}
    return {
        "ConditionExpression": "version = :read",
        "ExpressionAttributeValues": {":read": {"N": str(version)}},
    }


def _node_actions(
    table: str, node_items: list[codec.Item], stored: dict[str, int | None]
) -> list[dict[str, Any]]:
    """Puts one version past what was read, deletes of what the file no longer has."""
    actions: list[dict[str, Any]] = []
    for item in node_items:
        read = stored.get(item["SK"])
        attributes = codec.to_attributes({**item, "version": (read or 0) + 1})
        condition = _as_read(read, exists=item["SK"] in stored)
        actions.append({"Put": {"TableName": table, "Item": attributes, **condition}})
    keep = {item["SK"] for item in node_items}
    for sort_key, read in stored.items():
        if sort_key not in keep:
            key = {"PK": {"S": node_items[0]["PK"]}, "SK": {"S": sort_key}}
            actions.append({"Delete": {"TableName": table, "Key": key, **_as_read(read)}})
    return actions


def _action_size(action: dict[str, Any]) -> int:
    ((_, request),) = action.items()
    return item_size(request.get("Item") or request["Key"])


def _transactions(actions: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Chunks within TransactWriteItems' limits: 100 actions, 4 MB (kept to half)."""
    return sized_batches(actions, _action_size, MAX_TRANSACTION_ITEMS, MAX_TRANSACTION_BYTES)


def _write_node(
    client: Any,
    table: str,
    node_id: str,
    node_items: list[codec.Item],
    history: list[codec.Item],
) -> None:
    """Replace the node's history (first: a reservation that ended since the last load is in
    both for a moment, and readers take the live one), then its partition, each partition
    write conditioned on the version read just before.

    A write that lands between the read and ours fails our condition: read again, retry.
    """
    stored, _ = _stored_versions(client, table, node_id)
    write_history(client, table, node_id, history, stored)
    for _ in range(WRITE_ATTEMPTS):
        stored, created_at = _stored_versions(client, table, node_id)
        if created_at is not None:  # a node registered again keeps its createdAt, as a PUT does
            node_items = [
                {**item, "createdAt": created_at} if item["SK"] == table_keys.NODE_SK else item
                for item in node_items
            ]
        try:
            for transaction in _transactions(_node_actions(table, node_items, stored)):
                client.transact_write_items(TransactItems=transaction)
            return
        except ClientError as error:
            if error.response["Error"]["Code"] != "TransactionCanceledException":
                raise
    raise FleetError(f"node {node_id} kept changing while it was loaded: load it again")


def _record_load(client: Any, table: str, fleet_node: FleetNode, loaded_at: datetime) -> None:
    """The node as the file gave it, at the load's moment: where its usage starts (a load
    writes no event; the usage fold reads this record instead). After the node's own
    writes: a load cut short between them leaves the node counted from its previous start,
    and loading again records it."""
    node = fleet_node.model_dump(by_alias=True, mode="json", exclude_none=True)
    for item in usage.loaded_items(fleet_node.id, node, loaded_at):
        client.put_item(TableName=table, Item=codec.to_attributes(item))


def _keys_to_revoke(client: Any, table: str, keep: set[str]) -> list[str]:
    """Partition keys of stored, unrevoked API keys the file no longer has."""
    missing = []
    for page in client.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="begins_with(PK, :prefix)",
        ExpressionAttributeValues={":prefix": {"S": api_keys.APIKEY_PREFIX}},
        ProjectionExpression="PK, revoked",
        ConsistentRead=True,
    ):
        for item in page["Items"]:
            pk = item["PK"]["S"]
            if pk not in keep and not item.get("revoked", {}).get("BOOL", False):
                missing.append(pk)
    return missing


def _key_id_owners(client: Any, table: str, key_ids: list[str]) -> dict[str, str]:
    """Key id -> hash of the key whose ``KEYID#<id>`` marker holds it, for the ids taken.

    One consistent BatchGetItem per 100 ids; keys DynamoDB leaves unprocessed (it throttled
    the batch) are asked again after a pause, as AWS advises, a bounded number of times.
    """
    owners: dict[str, str] = {}
    for start in range(0, len(key_ids), MAX_BATCH_GET_KEYS):
        markers = [
            to_attributes(keyid_key(key_id))
            for key_id in key_ids[start : start + MAX_BATCH_GET_KEYS]
        ]
        wanted: dict[str, Any] = {
            table: {"Keys": markers, "ConsistentRead": True, "ProjectionExpression": "PK, keyHash"}
        }
        for attempt in range(READ_ATTEMPTS):
            if attempt:
                time.sleep(READ_BACKOFF_SECONDS * 2 ** (attempt - 1))
            response = client.batch_get_item(RequestItems=wanted)
            for marker in response["Responses"].get(table, []):
                owners[key_id_of(marker["PK"]["S"])] = marker["keyHash"]["S"]
            wanted = response.get("UnprocessedKeys") or {}
            if not wanted:
                break
        else:
            raise FleetError("DynamoDB kept throttling the read of the key ids: load it again")
    return owners


def check_key_ids(client: Any, table: str, fleet: Fleet) -> None:
    """Refuse, before anything is written, a file key whose id another key already has.

    Without this the clash would surface only when the keys are put, after the nodes were
    written. ``keys.put_key``'s condition stays the backstop for a key made in between.
    """
    taken = _key_id_owners(client, table, [fleet_key.key_id for fleet_key in fleet.api_keys])
    for fleet_key in fleet.api_keys:
        owner = taken.get(fleet_key.key_id)
        if owner is not None and owner != hash_key(fleet_key.key):
            raise FleetError(
                f"API key {fleet_key.key_id}: key id {fleet_key.key_id} is taken by another key"
            )


def check_platform_org(client: Any, table: str, fleet: Fleet, only_add: bool) -> None:
    """Refuse, before anything is written, to add keys under another platform org than the
    table's: the keys of the one it records would stay operator keys beside the file's."""
    recorded = keys.platform_org(client, table)
    if only_add and recorded not in (None, fleet.platform_org_id):
        raise FleetError(
            f"platformOrgId: the table's platform org is {recorded}; a file loaded with "
            "--only-add cannot change it (load it whole, which revokes the keys it lacks)"
        )


def _put_keys(client: Any, table: str, fleet: Fleet) -> None:
    """Every key of the file, through the key command's code (ids unique across the table;
    a key loaded again may keep its id)."""
    for fleet_key in fleet.api_keys:
        try:
            keys.put_key(client, table, fleet_key.key, _api_key(fleet, fleet_key), again=True)
        except keys.KeyCommandError as error:
            raise FleetError(f"API key {fleet_key.key_id}: {error}") from error


def create_node_queues(fleet: Fleet, sqs: Any, prefix: str, dead_letter_arn: str) -> dict[str, str]:
    """Register each node's spot-termination queue; node id -> queue URL."""
    return {
        node.id: node_queue.ensure_node_queue(sqs, prefix, node.id, dead_letter_arn)
        for node in fleet.nodes
    }


def write_fleet(
    fleet: Fleet,
    client: Any,
    table: str,
    loaded_at: datetime,
    queue_urls: dict[str, str] | None = None,
    *,
    only_add: bool = False,
    retention_days: int = DEFAULT_RETENTION_DAYS,
) -> int:
    """Replace each listed node's partition and put every key; revoke stored keys the file
    no longer has unless ``only_add``. Items never go back to an older version. Every check
    that can fail (item sizes, key ids) runs before the first write."""
    new_items = fleet_items(fleet, loaded_at, queue_urls, retention_days)
    check_sizes(new_items)
    check_key_ids(client, table, fleet)
    check_platform_org(client, table, fleet, only_add)
    key_items = [i for i in new_items if i["PK"].startswith(api_keys.APIKEY_PREFIX)]
    revoke = [] if only_add else _keys_to_revoke(client, table, {i["PK"] for i in key_items})
    for fleet_node in fleet.nodes:
        pk, history_pk = (
            table_keys.node_pk(fleet_node.id),
            table_keys.node_history_pk(fleet_node.id),
        )
        history = [i for i in new_items if i["PK"] == history_pk]
        _write_node(client, table, fleet_node.id, [i for i in new_items if i["PK"] == pk], history)
        _record_load(client, table, fleet_node, loaded_at)
    # Recorded before the keys: a key made by the command meanwhile is judged by it too.
    keys.record_platform_org(client, table, fleet.platform_org_id, replace=not only_add)
    _put_keys(client, table, fleet)
    for partition_key in revoke:
        keys.revoke_hash(client, table, partition_key.removeprefix(api_keys.APIKEY_PREFIX))
    return len(new_items)


def local_dead_letter_arn(sqs: Any) -> str:
    """The emulator's dead-letter queue (named after its logical id in template.yaml)."""
    url = sqs.get_queue_url(QueueName=LOCAL_DEAD_LETTER_QUEUE)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def _queue_prefix(prefix: str) -> str:
    """The template's NodeQueuePrefix rule, checked before anything is made."""
    try:
        node_queue.node_queue_name(prefix, "node")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return prefix


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reservations-fleet", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="check a fleet file, write nothing")
    validate.add_argument("fleet", type=Path)
    validate.add_argument(
        "--explain",
        action="store_true",
        help="say how each reservation and workload would be made: by which API rules, "
        "or as stated and why",
    )
    load = commands.add_parser("load", help="validate, then write a fleet file to DynamoDB")
    load.add_argument("fleet", type=Path)
    load.add_argument("--endpoint-url", help="DynamoDB endpoint (default: AWS, or the emulator)")
    load.add_argument("--table", default="ReservationsTable", help="table name")
    load.add_argument("--region", default=None, help="AWS region (default: from the environment)")
    load.add_argument(
        "--queue-prefix",
        default="reservations-node-",
        type=_queue_prefix,
        help="node queue name prefix, the stack's NodeQueuePrefix (default: the local one)",
    )
    load.add_argument(
        "--dead-letter-queue-arn",
        help="shared dead-letter queue ARN (default: the emulator's one)",
    )
    load.add_argument("--no-queues", action="store_true", help="do not create node queues")
    load.add_argument(
        "--only-add",
        action="store_true",
        help="add and update keys, but do not revoke stored keys the file no longer has",
    )
    load.add_argument(
        "--history-retention-days",
        type=int,
        default=DEFAULT_RETENTION_DAYS,
        help="how long ended reservations stay readable: the stack's HistoryRetentionDays "
        f"(default {DEFAULT_RETENTION_DAYS})",
    )
    return parser


def _load(fleet: Fleet, args: argparse.Namespace) -> int:
    """Check the key ids (so a clash makes no queue either), register the nodes' queues
    (unless --no-queues), then write the fleet."""
    client = boto3.client("dynamodb", endpoint_url=args.endpoint_url, region_name=args.region)
    loaded_at, started = datetime.now(UTC), time.monotonic()
    try:
        check_key_ids(client, args.table, fleet)
        queue_urls = None
        if not args.no_queues:
            sqs = boto3.client("sqs", endpoint_url=args.endpoint_url, region_name=args.region)
            dead_letter_arn = args.dead_letter_queue_arn or local_dead_letter_arn(sqs)
            queue_urls = create_node_queues(fleet, sqs, args.queue_prefix, dead_letter_arn)
        count = write_fleet(
            fleet,
            client,
            args.table,
            loaded_at,
            queue_urls,
            only_add=args.only_add,
            retention_days=args.history_retention_days,
        )
    except (FleetError, HistoryNotWritten) as error:
        print(error, file=sys.stderr)
        return 1
    took = time.monotonic() - started
    print(
        f"loaded {args.fleet}: {len(fleet.nodes)} nodes, {count} items into {args.table} "
        f"in {took:.1f} s ({summary(routes(fleet, loaded_at))}; {_past(fleet, loaded_at)})"
    )
    return 0


def _past(fleet: Fleet, loaded_at: datetime) -> str:
    """``ended reservations: 3 stated, 3000 generated, into the nodes' history``"""
    stated = sum(
        1
        for node in fleet.nodes
        for r in node.reservations
        if r.status in ENDED or (r.ends_at is not None and r.ends_at <= loaded_at)
    )
    made = sum(node.generated_past_reservations for node in fleet.nodes)
    return f"ended reservations: {stated} stated, {made} generated, into the nodes' history"


def summary(made: list[Route]) -> str:
    """``reservations: 1 by the API's rules, 4 as stated; workloads: …``"""
    parts = []
    for kind in ("reservation", "workload"):
        of_kind = [route for route in made if route.kind == kind]
        by_rules = sum(1 for route in of_kind if route.rules)
        stated = len(of_kind) - by_rules
        parts.append(f"{kind}s: {by_rules} by the API's rules, {stated} as stated")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """The ``reservations-fleet`` command: validate or load a fleet file."""
    args = _parser().parse_args(argv)
    try:
        fleet = read_fleet(args.fleet)
        check_fleet(fleet, datetime.now(UTC))
    except FleetError as error:
        print(error, file=sys.stderr)
        return 1
    if args.command == "validate":
        made = routes(fleet, datetime.now(UTC))
        print(
            f"{args.fleet}: valid ({len(fleet.nodes)} nodes, {len(fleet.api_keys)} API keys; "
            f"{summary(made)})"
        )
        if args.explain:
            print("\n".join(f"  {route}" for route in made))
        return 0
    return _load(fleet, args)


if __name__ == "__main__":
    sys.exit(main())

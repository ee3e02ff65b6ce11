"""Load a fleet file into DynamoDB: validate the whole file first, then write it.

    reservations-fleet validate FLEET.json
    reservations-fleet load FLEET.json [--endpoint-url URL] [--table NAME] [--region REGION]
                       [--queue-prefix PREFIX] [--dead-letter-queue-arn ARN | --no-queues]

Loading registers each node: it creates the node's spot-termination queue (FIFO, redriving
to the shared dead-letter queue) and stores its URL on the node's item, replaces the node's
partition (items the file no longer has are deleted) and puts every API key. Nothing is
written unless the whole file is valid.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
from pydantic import ValidationError

from reservations.auth.keys import derive_key_id, hash_key
from reservations.dal import items, queues
from reservations.fleet.model import Fleet, FleetNode, parse_fleet
from reservations.models.domain import (
    CLAIMING_STATES,
    ApiKey,
    Node,
    Reservation,
    Unit,
    Workload,
    WorkloadState,
)

LOCAL_DEAD_LETTER_QUEUE = "SpotTerminationDeadLetterQueue.fifo"


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
        where = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem["loc"]
        ).lstrip(".")
        lines.append(f"  {where or '(file)'}: {problem['msg']}")
    return "\n".join(lines)


def node_items(
    fleet_node: FleetNode, loaded_at: datetime, queue_url: str | None = None
) -> list[items.Item]:
    """The node partition's items for one node of the fleet."""
    claims = {
        unit_id: f"{workload.kind.value}:{workload.id}"
        for workload in fleet_node.workloads
        if workload.state in CLAIMING_STATES
        for unit_id in workload.unit_ids
    }
    node = Node(
        id=fleet_node.id,
        owner_org_id=fleet_node.owner_org_id,
        topology_gen=fleet_node.topology_gen,
        queue_url=queue_url,
    )
    result = [items.node_item(node)]
    for unit in fleet_node.units:
        result.append(
            items.unit_item(
                node.id,
                Unit(
                    id=unit.id,
                    alloc_class=unit.alloc_class,
                    gpu_model_id=unit.gpu_model_id,
                    gpu_model_name=unit.gpu_model_name,
                    sellable_gpus=unit.sellable_gpus,
                    sellable=unit.sellable,
                    not_sellable_reason=unit.not_sellable_reason,
                    claimed_by=claims.get(unit.id),
                ),
            )
        )
    for reservation in fleet_node.reservations:
        result.append(
            items.reservation_item(
                Reservation(
                    id=reservation.id,
                    node_id=node.id,
                    status=reservation.status,
                    starts_at=reservation.starts_at,
                    ends_at=reservation.ends_at,
                    allowed_org_ids=tuple(reservation.allowed_org_ids),
                    managing_org_ids=tuple(reservation.managing_org_ids),
                    reserved_unit_ids=tuple(sorted(reservation.reserved_unit_ids)),
                    released_unit_ids=tuple(sorted(reservation.released_unit_ids)),
                    contract_ref=reservation.contract_ref,
                    reason=reservation.reason,
                    topology_gen=reservation.topology_gen,
                    created_at=reservation.created_at or loaded_at,
                    updated_at=reservation.updated_at or reservation.created_at or loaded_at,
                )
            )
        )
    for workload in fleet_node.workloads:
        terminating = workload.state is WorkloadState.TERMINATING
        result.append(
            items.workload_item(
                node.id,
                Workload(
                    id=workload.id,
                    kind=workload.kind,
                    tier=workload.tier,
                    org_id=workload.org_id,
                    unit_ids=tuple(workload.unit_ids),
                    state=workload.state,
                    # A termination under way must be findable by the sweeper.
                    termination_id=workload.termination_id
                    or (f"term-fleet-{fleet_node.id}-{workload.id}" if terminating else None),
                    termination_requested_at=loaded_at if terminating else None,
                ),
            )
        )
    return result


def fleet_items(
    fleet: Fleet, loaded_at: datetime, queue_urls: dict[str, str] | None = None
) -> list[items.Item]:
    """Every item the fleet describes: API keys, then each node's partition."""
    result = []
    for fleet_key in fleet.api_keys:
        api_key = ApiKey(
            key_id=fleet_key.id or derive_key_id(fleet_key.key),
            org_id=fleet_key.org_id,
            permissions=frozenset(fleet_key.permissions),
            platform_operator=fleet_key.org_id == fleet.platform_org_id,
            revoked=fleet_key.revoked,
            expires_at=fleet_key.expires_at,
        )
        result.append(items.apikey_item(hash_key(fleet_key.key), api_key))
    for fleet_node in fleet.nodes:
        result.extend(node_items(fleet_node, loaded_at, (queue_urls or {}).get(fleet_node.id)))
    return result


def _chunks(requests: list[Any], size: int = 25) -> Iterator[list[Any]]:
    for start in range(0, len(requests), size):
        yield requests[start : start + size]


def _batch_write(client: Any, table: str, requests: list[dict[str, Any]]) -> None:
    for chunk in _chunks(requests):
        pending: dict[str, Any] = {table: chunk}
        while pending:
            response = client.batch_write_item(RequestItems=pending)
            pending = response.get("UnprocessedItems") or {}


def create_node_queues(fleet: Fleet, sqs: Any, prefix: str, dead_letter_arn: str) -> dict[str, str]:
    """Register each node's spot-termination queue; node id -> queue URL."""
    return {
        node.id: queues.ensure_node_queue(sqs, prefix, node.id, dead_letter_arn)
        for node in fleet.nodes
    }


def write_fleet(
    fleet: Fleet,
    client: Any,
    table: str,
    loaded_at: datetime,
    queue_urls: dict[str, str] | None = None,
) -> int:
    """Put every item of the fleet and delete what its nodes' partitions no longer hold."""
    new_items = fleet_items(fleet, loaded_at, queue_urls)
    _batch_write(
        client, table, [{"PutRequest": {"Item": items.to_attributes(i)}} for i in new_items]
    )
    keep = {(i["PK"], i["SK"]) for i in new_items}
    stale = []
    for fleet_node in fleet.nodes:
        paginator = client.get_paginator("query")
        for page in paginator.paginate(
            TableName=table,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": items.node_pk(fleet_node.id)}},
            ProjectionExpression="PK, SK",
        ):
            for key in page["Items"]:
                if (key["PK"]["S"], key["SK"]["S"]) not in keep:
                    stale.append({"DeleteRequest": {"Key": key}})
    _batch_write(client, table, stale)
    return len(new_items)


def local_dead_letter_arn(sqs: Any) -> str:
    """The emulator's dead-letter queue (named after its logical id in template.yaml)."""
    url = sqs.get_queue_url(QueueName=LOCAL_DEAD_LETTER_QUEUE)["QueueUrl"]
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return str(attributes["Attributes"]["QueueArn"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reservations-fleet", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="check a fleet file, write nothing")
    validate.add_argument("fleet", type=Path)
    load = commands.add_parser("load", help="validate, then write a fleet file to DynamoDB")
    load.add_argument("fleet", type=Path)
    load.add_argument("--endpoint-url", help="DynamoDB endpoint (default: AWS, or the emulator)")
    load.add_argument("--table", default="ReservationsTable", help="table name")
    load.add_argument("--region", default=None, help="AWS region (default: from the environment)")
    load.add_argument(
        "--queue-prefix", default="reservations-node-", help="node queue name prefix (stack-node-)"
    )
    load.add_argument(
        "--dead-letter-queue-arn",
        help="shared dead-letter queue ARN (default: the emulator's one)",
    )
    load.add_argument("--no-queues", action="store_true", help="do not create node queues")
    args = parser.parse_args(argv)

    try:
        fleet = read_fleet(args.fleet)
    except FleetError as error:
        print(error, file=sys.stderr)
        return 1
    if args.command == "validate":
        print(f"{args.fleet}: valid ({len(fleet.nodes)} nodes, {len(fleet.api_keys)} API keys)")
        return 0
    client = boto3.client("dynamodb", endpoint_url=args.endpoint_url, region_name=args.region)
    queue_urls = None
    if not args.no_queues:
        sqs = boto3.client("sqs", endpoint_url=args.endpoint_url, region_name=args.region)
        dead_letter_arn = args.dead_letter_queue_arn or local_dead_letter_arn(sqs)
        queue_urls = create_node_queues(fleet, sqs, args.queue_prefix, dead_letter_arn)
    count = write_fleet(fleet, client, args.table, datetime.now(UTC), queue_urls)
    print(f"loaded {args.fleet}: {len(fleet.nodes)} nodes, {count} items into {args.table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

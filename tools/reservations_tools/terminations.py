"""``reservations-terminations``: the terminations a node never reported, and a re-drive.

    reservations-terminations stuck [--endpoint-url URL] [--table NAME] [--region REGION]
    reservations-terminations redrive NODE WORKLOAD [--endpoint-url URL] [--table NAME] ...

``stuck`` lists every termination delivered the maximum number of times without a report
(the SweeperGiveUps alarm): node, workload, termination id, age and deliveries. The sweeper
still sends those at a slow pace. ``redrive`` sends one open or stuck termination now (for
example once its node's agent is fixed); it counts as a delivery.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from datetime import datetime, timedelta
from functools import partial

import boto3

from reservations.kernel.clock import utc_now
from reservations.kernel.times import format_time
from reservations.nodes.models.partition import TerminationState
from reservations.terminations.models import OpenTermination
from reservations.terminations.sweeper import deliver
from reservations.terminations.table.queues import SendResult, send_termination
from reservations.terminations.table.store import TerminationTable

_COLUMNS = ("NODE", "WORKLOAD", "TERMINATION", "AGE", "DELIVERIES", "LAST DELIVERED")


def age(elapsed: timedelta) -> str:
    """A short human age: ``42s``, ``17m``, ``3h05m``, ``2d04h``."""
    seconds = max(int(elapsed.total_seconds()), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m" if minutes else f"{seconds}s"


def stuck_rows(terminations: Iterable[OpenTermination], now: datetime) -> list[tuple[str, ...]]:
    """One row per stuck termination; its AGE counts from its deadline (``terminateAt``,
    the request for one without a notice), as the stuck clock does."""
    rows: list[tuple[str, ...]] = []
    for termination in terminations:
        workload, record = termination.workload, termination.termination
        requested = record.deadline
        last = record.last_delivered_at
        rows.append(
            (
                termination.node_id,
                workload.id,
                termination.termination_id,
                age(now - requested) if requested else "?",
                str(record.deliveries),
                format_time(last) if last else "-",
            )
        )
    return rows


def print_table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(row[i]) for row in [_COLUMNS, *rows]) for i in range(len(_COLUMNS))]
    for row in [_COLUMNS, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))


def list_stuck(store: TerminationTable, now: datetime) -> int:
    rows = stuck_rows(store.listed(TerminationState.STUCK), now)
    if not rows:
        print("no stuck terminations")
        return 0
    print_table(rows)
    return 0


def redrive(store: TerminationTable, sqs: object, node_id: str, workload_id: str) -> int:
    termination = store.read(node_id, workload_id)
    if termination is None:
        print(f"no open termination for workload {workload_id} on node {node_id}", file=sys.stderr)
        return 1
    result = deliver(termination, utc_now(), store, partial(send_termination, sqs=sqs))
    if result is SendResult.ACCEPTED:
        count = termination.termination.deliveries + 1
        print(f"sent {termination.termination_id} to node {node_id} (delivery {count})")
        return 0
    if result is SendResult.NO_QUEUE:
        print(f"node {node_id} has no queue: register it again, then re-drive", file=sys.stderr)
    else:
        print(f"SQS did not accept {termination.termination_id}; try again", file=sys.stderr)
    return 1


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--endpoint-url", help="AWS endpoint (default: AWS, or the emulator)")
    where.add_argument("--table", default="ReservationsTable", help="table name")
    where.add_argument("--region", default=None, help="AWS region (default: the environment)")
    parser = argparse.ArgumentParser(
        prog="reservations-terminations", description=(__doc__ or "").split("\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser(
        "stuck", parents=[where], help="list terminations delivered without any report"
    )
    one = commands.add_parser("redrive", parents=[where], help="send one termination now")
    one.add_argument("node", help="node id")
    one.add_argument("workload", help="workload id")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    dynamodb = boto3.client("dynamodb", endpoint_url=args.endpoint_url, region_name=args.region)
    store = TerminationTable(dynamodb, args.table)
    if args.command == "stuck":
        return list_stuck(store, utc_now())
    sqs = boto3.client("sqs", endpoint_url=args.endpoint_url, region_name=args.region)
    return redrive(store, sqs, args.node, args.workload)


if __name__ == "__main__":
    sys.exit(main())

"""The node-side consumers of the local stack: one reference agent per registered node.

Each runs the same Consumer as ``spot-termination-agent`` with the ``log`` driver (it
pretends to stop the workload), in a thread of this one process to spare the machine a
Python per node. The ``log`` driver starts no stop before a message's ``terminateAt``: a
workload given notice is pretended to use all of it, and reported stopped at its
``terminateAt`` (its message waits in a thread of its own meanwhile, as the agent's do).
Nodes are found in the table, every ``--every`` seconds (2 by default), so a node
registered through ``PUT /v1/nodes/{nodeId}`` gets its consumer within a few seconds,
as one loaded from the fleet file does at start.

    python -m devstack.consumers --emulator http://127.0.0.1:5000 [--table T] [--every 2]
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import boto3

from devstack.emulator import REGION
from devstack.fleets import NODE_QUEUE_PREFIX, TABLE
from node_agent.consumer import Consumer
from node_agent.drivers import LogDriver
from reservations.nodes.table.keys import NODE_SK
from reservations.terminations.table.queues import node_queue_name


def registered_nodes(dynamodb: Any, table: str) -> set[str]:
    """Ids of the nodes in the table that have a queue (a Scan: the local stack only)."""
    found = set()
    for page in dynamodb.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="SK = :node AND attribute_exists(queueUrl)",
        ProjectionExpression="id",
        ExpressionAttributeValues={":node": {"S": NODE_SK}},
    ):
        found.update(item["id"]["S"] for item in page["Items"])
    return found


class Consumers:
    """A consumer thread per node, started the first time the node is seen."""

    def __init__(self, make_consumer: Callable[[str], Consumer]) -> None:
        self.make_consumer = make_consumer
        self.running: dict[str, tuple[Consumer, threading.Thread]] = {}
        self.stopping = threading.Event()

    def start_new(self, node_ids: set[str]) -> list[str]:
        """Start a consumer for each node without one; the ids started."""
        started = sorted(node_ids - set(self.running))
        for node_id in started:
            consumer = self.make_consumer(node_id)
            thread = threading.Thread(target=consumer.run, name=f"agent[{node_id}]", daemon=True)
            self.running[node_id] = (consumer, thread)
            thread.start()
            logging.info("consumer started for node %s", node_id)
        return started

    def watch(self, discover: Callable[[], set[str]], every: float) -> None:
        """Discover nodes until stopped (a failed look is tried again at the next tick)."""
        while not self.stopping.is_set():
            try:
                self.start_new(discover())
            except Exception:  # the emulator restarting must not end the consumers
                logging.exception("could not list the registered nodes")
            self.stopping.wait(every)

    def stop(self) -> None:
        self.stopping.set()
        for consumer, _ in self.running.values():
            consumer.stop()

    def join(self) -> None:
        for _, thread in list(self.running.values()):
            thread.join()


def consumer_factory(emulator: str) -> Callable[[str], Consumer]:
    """Consumers of the emulator's node queues, reporting to its reports queue."""
    sqs = boto3.client("sqs", endpoint_url=emulator, region_name=REGION)
    reports = sqs.get_queue_url(QueueName="TerminationReportsQueue")["QueueUrl"]

    def make(node_id: str) -> Consumer:
        queue = sqs.get_queue_url(QueueName=node_queue_name(NODE_QUEUE_PREFIX, node_id))
        client = boto3.client("sqs", endpoint_url=emulator, region_name=REGION)
        return Consumer(client, node_id, queue["QueueUrl"], reports, LogDriver(), wait_seconds=5)

    return make


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--emulator", required=True)
    parser.add_argument("--table", default=TABLE)
    parser.add_argument("--every", type=float, default=2.0, help="seconds between looks")
    parser.add_argument("--fleet", type=Path, help="(unused: nodes are found in the table)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")

    dynamodb = boto3.client("dynamodb", endpoint_url=args.emulator, region_name=REGION)
    consumers = Consumers(consumer_factory(args.emulator))

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        consumers.stop()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    consumers.watch(lambda: registered_nodes(dynamodb, args.table), args.every)
    consumers.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())

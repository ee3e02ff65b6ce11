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
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import boto3

from devstack.emulator import REGION
from devstack.fleets import NODE_QUEUE_PREFIX, TABLE
from devstack.stopping import exit_now
from node_agent.consumer import Consumer
from node_agent.drivers import LogDriver
from reservations.nodes.table.keys import NODE_SK
from reservations.nodes.table.queue import node_queue_name


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
        self.lock = threading.Lock()  # the watch starts consumers while a stop may come

    def start_new(self, node_ids: set[str]) -> list[str]:
        """Start a consumer for each node without one (none once stopped); the ids started."""
        with self.lock:
            started = [] if self.stopping.is_set() else sorted(node_ids - set(self.running))
            for node_id in started:
                consumer = self.make_consumer(node_id)
                thread = threading.Thread(
                    target=consumer.run, name=f"agent[{node_id}]", daemon=True
                )
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
        with self.lock:
            self.stopping.set()
            for consumer, _ in self.running.values():
                consumer.stop()

    def join(self) -> None:
        """Until each consumer has finished the message in hand. One in a long poll holds
        none and is not waited for: nothing cuts a receive short (5 s on the local queues),
        and what it would have received comes back after its visibility timeout (the
        emulator, which holds it, stops after the consumers anyway)."""
        with self.lock:
            running = list(self.running.values())
        for consumer, thread in running:
            while thread.is_alive() and not in_long_poll(consumer):
                thread.join(0.05)


class Receiving:
    """A consumer's SQS client that says whether a receive (a long poll) is under way."""

    def __init__(self, sqs: Any) -> None:
        self._sqs = sqs
        self.receiving = False

    def receive_message(self, **request: Any) -> Any:
        self.receiving = True
        try:
            return self._sqs.receive_message(**request)
        finally:
            self.receiving = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sqs, name)


def in_long_poll(consumer: Consumer) -> bool:
    """Whether the consumer is waiting in a receive (so holds no message)."""
    sqs = getattr(consumer, "sqs", None)
    return isinstance(sqs, Receiving) and sqs.receiving


def consumer_factory(emulator: str) -> Callable[[str], Consumer]:
    """Consumers of the emulator's node queues, reporting to its reports queue."""
    sqs = boto3.client("sqs", endpoint_url=emulator, region_name=REGION)
    reports = sqs.get_queue_url(QueueName="TerminationReportsQueue")["QueueUrl"]

    def make(node_id: str) -> Consumer:
        queue = sqs.get_queue_url(QueueName=node_queue_name(NODE_QUEUE_PREFIX, node_id))
        client = Receiving(boto3.client("sqs", endpoint_url=emulator, region_name=REGION))
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
    # The look for nodes runs on a thread of its own: a stop does not wait for the one in
    # hand (a Scan of the whole table: 1-3 s on the demo fleet's 3,000 ended reservations).
    threading.Thread(
        target=consumers.watch, args=(lambda: registered_nodes(dynamodb, args.table), args.every),
        name="nodes", daemon=True,
    ).start()  # fmt: skip
    consumers.stopping.wait()
    consumers.join()
    return 0


if __name__ == "__main__":
    exit_now(main())

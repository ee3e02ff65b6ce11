"""The node-side consumers of the local stack: one reference agent per node of the fleet.

Each runs the same Consumer as ``spot-termination-agent`` with the ``log`` driver (it
pretends to stop the workload), in a thread of this one process to spare the machine a
Python per node.

    python -m devstack.consumers --fleet FLEET --emulator http://127.0.0.1:5000
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import boto3

from devstack.emulator import REGION
from devstack.fleets import NODE_QUEUE_PREFIX
from node_agent.consumer import Consumer
from node_agent.drivers import LogDriver
from reservations.dal.queues import node_queue_name
from reservations_tools.fleet.loader import read_fleet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fleet", type=Path, required=True)
    parser.add_argument("--emulator", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")

    fleet = read_fleet(args.fleet)
    sqs = boto3.client("sqs", endpoint_url=args.emulator, region_name=REGION)
    reports = sqs.get_queue_url(QueueName="TerminationReportsQueue")["QueueUrl"]
    consumers = []
    for node in fleet.nodes:
        queue = sqs.get_queue_url(QueueName=node_queue_name(NODE_QUEUE_PREFIX, node.id))
        client = boto3.client("sqs", endpoint_url=args.emulator, region_name=REGION)
        consumers.append(
            Consumer(client, node.id, queue["QueueUrl"], reports, LogDriver(), wait_seconds=5)
        )

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        for consumer in consumers:
            consumer.stop()

    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    threads = [
        threading.Thread(target=consumer.run, name=f"agent[{consumer.node_id}]")
        for consumer in consumers
    ]
    for thread in threads:
        thread.start()
    logging.info("consumers running for %d node(s)", len(threads))
    for thread in threads:
        thread.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())

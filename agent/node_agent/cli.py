"""``spot-termination-agent``: run the consumer for one node.

    spot-termination-agent --node-id node-a1 --queue-url URL --reports-queue-url URL \\
        --driver command --command 'virsh destroy {workloadId}' [--state-file PATH]
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from types import FrameType

import boto3

from node_agent.consumer import Consumer, DoneLog
from node_agent.drivers import DEFAULT_GONE_PATTERN, CommandDriver, Driver, LogDriver


def build_driver(args: argparse.Namespace) -> Driver:
    if args.driver == "log":
        return LogDriver()
    if not args.command:
        raise SystemExit("--driver command needs --command, e.g. 'virsh destroy {workloadId}'")
    return CommandDriver(args.command, args.timeout, args.gone_pattern)


def parser() -> argparse.ArgumentParser:
    """The command line: the node, its queues, and how to stop a workload."""
    parser = argparse.ArgumentParser(prog="spot-termination-agent", description=__doc__)
    parser.add_argument("--node-id", required=True)
    parser.add_argument("--queue-url", required=True, help="this node's spot-termination queue")
    parser.add_argument("--reports-queue-url", required=True)
    parser.add_argument("--driver", choices=["log", "command"], default="log")
    parser.add_argument("--command", help="with --driver command; {workloadId} is substituted")
    parser.add_argument("--timeout", type=float, default=30.0, help="command timeout, seconds")
    parser.add_argument(
        "--gone-pattern",
        default=DEFAULT_GONE_PATTERN,
        help="regex on the command's output meaning 'already gone'",
    )
    parser.add_argument("--state-file", type=Path, help="where finished termination ids are kept")
    parser.add_argument("--endpoint-url", help="AWS endpoint (the local emulator)")
    parser.add_argument("--region", default=None)
    parser.add_argument("--wait-seconds", type=int, default=20, help="long-poll wait")
    return parser


def build_consumer(args: argparse.Namespace) -> Consumer:
    """The consumer for this node's queue, reporting to the reports queue."""
    sqs = boto3.client("sqs", endpoint_url=args.endpoint_url, region_name=args.region)
    return Consumer(
        sqs,
        args.node_id,
        args.queue_url,
        args.reports_queue_url,
        build_driver(args),
        DoneLog(args.state_file),
        wait_seconds=args.wait_seconds,
    )


def stop_on_signals(consumer: Consumer) -> None:
    """SIGTERM and SIGINT finish the message in hand, then stop."""

    def _stop(signum: int, _frame: FrameType | None) -> None:
        logging.getLogger("node_agent").info("signal %d: finishing the message in hand", signum)
        consumer.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s agent[{args.node_id}] %(levelname)s %(message)s"
    )
    consumer = build_consumer(args)
    stop_on_signals(consumer)
    consumer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())

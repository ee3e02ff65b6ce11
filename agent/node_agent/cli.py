"""``spot-termination-agent``: run the consumer for one node.

    spot-termination-agent --node-id node-a1 --queue-url URL --reports-queue-url URL \\
        --driver libvirt --grace-seconds 30 [--driver kubernetes --namespace spot] \\
        [--state-file PATH] [--metrics-port 9464 | --metrics-textfile PATH]
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import boto3

from node_agent import systemd
from node_agent.consumer import Consumer, DoneLog
from node_agent.drivers import DEFAULT_GONE_PATTERN, CommandDriver, Driver, Drivers, LogDriver
from node_agent.metrics import AgentMetrics

log = logging.getLogger("node_agent")

DRIVERS = ("log", "command", "libvirt", "kubernetes")
MAX_GRACE_SECONDS = 300
DEFAULT_GRACE_SECONDS = 30
EXTRA = "pip install 'spot-termination-agent[{0}]'"


def grace_seconds(value: str) -> int:
    seconds = int(value)
    if not 0 <= seconds <= MAX_GRACE_SECONDS:
        raise argparse.ArgumentTypeError(f"must be 0-{MAX_GRACE_SECONDS}")
    return seconds


def queue_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node-id", required=True)
    parser.add_argument("--queue-url", required=True, help="this node's spot-termination queue")
    parser.add_argument("--reports-queue-url", required=True)
    parser.add_argument("--state-file", type=Path, help="where finished termination ids are kept")
    parser.add_argument("--endpoint-url", help="AWS endpoint (the local emulator)")
    parser.add_argument("--region", default=None)
    parser.add_argument("--wait-seconds", type=int, default=20, help="long-poll wait")


def driver_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("drivers")
    group.add_argument(
        "--driver",
        action="append",
        choices=DRIVERS,
        help="repeatable, one per workload kind: libvirt stops VMs, kubernetes pods, "
        "log and command both (default: log, which only pretends)",
    )
    group.add_argument(
        "--grace-seconds",
        type=grace_seconds,
        default=DEFAULT_GRACE_SECONDS,
        help="clamped to a reclaim's notice (none without one): libvirt: ACPI shutdown this "
        "long before terminateAt, destroy at it; command: run this long before terminateAt, "
        "as {graceSeconds}; kubernetes ignores it when a message has terminateAt (the pod's "
        "grace is the time left); for messages without terminateAt, the old behaviour "
        f"(default {DEFAULT_GRACE_SECONDS})",
    )
    group.add_argument(
        "--libvirt-uri", default="qemu:///system", help="libvirt: the hypervisor's URI"
    )
    group.add_argument(
        "--kubeconfig", type=Path, help="kubernetes: a kubeconfig file (default: in-cluster)"
    )
    group.add_argument("--kube-context", help="kubernetes: the kubeconfig context to use")
    group.add_argument("--namespace", default="default", help="kubernetes: the pods' namespace")
    group.add_argument("--command", help="with --driver command; {workloadId} is substituted")
    group.add_argument("--timeout", type=float, default=30.0, help="command timeout, seconds")
    group.add_argument(
        "--gone-pattern",
        default=DEFAULT_GONE_PATTERN,
        help="command: regex on its output meaning 'already gone'",
    )


def metrics_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("health and metrics (Prometheus)")
    group.add_argument("--metrics-port", type=int, help="serve the metrics over HTTP")
    group.add_argument("--metrics-address", default="127.0.0.1", help="with --metrics-port")
    group.add_argument(
        "--metrics-textfile",
        type=Path,
        help="write them here after every round (node_exporter's textfile collector)",
    )


def parser() -> argparse.ArgumentParser:
    """The command line: the node, its queues, how to stop a workload, and its metrics."""
    parser = argparse.ArgumentParser(
        prog="spot-termination-agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    queue_arguments(parser)
    driver_arguments(parser)
    metrics_arguments(parser)
    return parser


def build_driver(name: str, args: argparse.Namespace) -> Driver:
    """One driver; those of libvirt and Kubernetes import their client library only here."""
    if name == "log":
        return LogDriver()
    if name == "command":
        if not args.command:
            raise SystemExit("--driver command needs --command, e.g. 'virsh destroy {workloadId}'")
        return CommandDriver(args.command, args.timeout, args.gone_pattern, args.grace_seconds)
    try:
        if name == "libvirt":
            from node_agent.libvirt_driver import LibvirtDriver

            return LibvirtDriver(args.libvirt_uri, args.grace_seconds)
        from node_agent.kubernetes_driver import KubernetesDriver, api_client
    except ImportError as error:
        raise SystemExit(f"--driver {name} needs {error.name}: {EXTRA.format(name)}") from error
    try:
        api = api_client(args.kubeconfig, args.kube_context)
    except Exception as error:  # the client's ConfigException, or a file it cannot read
        raise SystemExit(f"--driver kubernetes: no usable configuration: {error}") from error
    return KubernetesDriver(api, args.namespace, args.grace_seconds)


def build_drivers(args: argparse.Namespace) -> Drivers:
    try:
        return Drivers([build_driver(name, args) for name in args.driver or ["log"]])
    except ValueError as error:
        raise SystemExit(f"--driver: {error}") from error


def build_consumer(
    args: argparse.Namespace, drivers: Drivers, metrics: AgentMetrics, tick: Callable[[], None]
) -> Consumer:
    """The consumer for this node's queue, reporting to the reports queue."""
    sqs = boto3.client("sqs", endpoint_url=args.endpoint_url, region_name=args.region)
    return Consumer(
        sqs,
        args.node_id,
        args.queue_url,
        args.reports_queue_url,
        drivers,
        DoneLog(args.state_file),
        wait_seconds=args.wait_seconds,
        metrics=metrics,
        tick=tick,
    )


def expose(args: argparse.Namespace, metrics: AgentMetrics) -> Callable[[], None]:
    """Start the metrics endpoint if asked; what to do after every round (the textfile, the
    watchdog's ping)."""
    if args.metrics_port is not None:
        metrics.serve(args.metrics_port, args.metrics_address)

    def tick() -> None:
        if args.metrics_textfile is not None:
            try:
                metrics.write_textfile(args.metrics_textfile)
            except OSError as error:
                log.warning("could not write %s: %s", args.metrics_textfile, error)
        systemd.notify("WATCHDOG=1")

    return tick


def check_watchdog(args: argparse.Namespace) -> None:
    """A round lasts up to the long poll plus a stop: a shorter watchdog kills a healthy agent."""
    interval = systemd.watchdog_seconds()
    needed = args.wait_seconds + args.grace_seconds + args.timeout
    if interval is not None and interval < needed:
        log.warning("WatchdogSec=%g is shorter than a round may last (%g s)", interval, needed)


def stop_on_signals(consumer: Consumer) -> None:
    """SIGTERM and SIGINT finish the message in hand, then stop."""

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: finishing the message in hand", signum)
        systemd.notify("STOPPING=1")
        consumer.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format=f"%(asctime)s agent[{args.node_id}] %(levelname)s %(message)s"
    )
    drivers = build_drivers(args)
    metrics = AgentMetrics(drivers.names())
    tick = expose(args, metrics)
    consumer = build_consumer(args, drivers, metrics, tick)
    stop_on_signals(consumer)
    check_watchdog(args)
    tick()
    systemd.notify("READY=1")
    log.info("polling %s with %s", args.queue_url, ", ".join(drivers.names()))
    consumer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())

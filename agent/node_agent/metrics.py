"""What the node's monitoring reads: Prometheus metrics, served over HTTP or written to a
textfile for node_exporter's textfile collector (or both).

- ``spot_agent_last_successful_poll_timestamp_seconds`` (gauge)
- ``spot_agent_messages_received_total`` (counter)
- ``spot_agent_outcomes_total{outcome}``: terminated, gone, failed, duplicate, poison, foreign
- ``spot_agent_stop_duration_seconds{driver}`` (histogram)
- ``spot_agent_failures_total{stage}``: receive, stop, report, delete

Alert on a stale last poll (the agent cannot read its queue) and on failures: a stop that
keeps failing leaves the units held until the API's sweeper flags the termination stuck.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
    write_to_textfile,
)

OUTCOMES = ("terminated", "gone", "failed", "duplicate", "poison", "foreign")
STAGES = ("receive", "stop", "report", "delete", "visibility")
# A destroy takes well under a second; a grace period and a pod's wait take up to minutes.
STOP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class AgentMetrics:
    """The agent's metrics, in a registry of their own."""

    def __init__(self, drivers: tuple[str, ...] = ()) -> None:
        self.registry = CollectorRegistry()
        self.last_poll = Gauge(
            "spot_agent_last_successful_poll_timestamp_seconds",
            "When the agent last received from its queue without error (Unix time).",
            registry=self.registry,
        )
        self.received = Counter(
            "spot_agent_messages_received", "Messages received.", registry=self.registry
        )
        self.outcomes = Counter(
            "spot_agent_outcomes", "Messages handled, by outcome.", ["outcome"],
            registry=self.registry,
        )  # fmt: skip
        self.stop_seconds = Histogram(
            "spot_agent_stop_duration_seconds", "How long a driver took to stop a workload.",
            ["driver"], buckets=STOP_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.failures = Counter(
            "spot_agent_failures", "Failures, by stage.", ["stage"], registry=self.registry
        )
        self._zeros(drivers)

    def _zeros(self, drivers: tuple[str, ...]) -> None:
        """Every series exists from the start, so a rate() over a first failure works."""
        for outcome in OUTCOMES:
            self.outcomes.labels(outcome)
        for stage in STAGES:
            self.failures.labels(stage)
        for driver in drivers:
            self.stop_seconds.labels(driver)

    def serve(self, port: int, address: str) -> Any:
        """Serve the metrics over HTTP (any path) from a daemon thread; the server."""
        server, _thread = start_http_server(port, address, registry=self.registry)
        return server

    def write_textfile(self, path: Path) -> None:
        """Write them where node_exporter's textfile collector reads (atomically)."""
        write_to_textfile(str(path), self.registry)

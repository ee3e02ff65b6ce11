"""What the node's monitoring reads (Prometheus metrics over HTTP or in a textfile) and
systemd's watchdog: the consumer's counts as metrics, a loop that outlives AWS errors, and
sd_notify's datagrams."""

from __future__ import annotations

import argparse
import socket
import time
import urllib.request

import pytest
from botocore.exceptions import EndpointConnectionError

from node_agent import systemd
from node_agent.cli import expose
from node_agent.consumer import Consumer
from node_agent.drivers import LogDriver, Result
from node_agent.metrics import AgentMetrics
from tests.agent.support import termination

pytestmark = pytest.mark.moto


def value(metrics: AgentMetrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


class Fails:
    name = "flaky"

    def stop(self, _termination):
        return Result("failed", "cannot acquire state change lock")


class Raises:
    name = "broken"

    def stop(self, _termination):
        raise RuntimeError("the hypervisor's client blew up")


def consumer(queues, driver, metrics) -> Consumer:
    return Consumer(queues.sqs, "node-a", queues.node, queues.reports, driver,
                    wait_seconds=0, visibility_timeout=0, metrics=metrics)  # fmt: skip


def test_messages_outcomes_and_stop_latency_are_counted(queues):
    metrics = AgentMetrics(("log",))
    assert value(metrics, "spot_agent_outcomes_total", outcome="terminated") == 0  # exists at 0
    agent = consumer(queues, LogDriver(), metrics)
    queues.send(termination())
    queues.send(termination(node_id="node-b"))
    before = time.time()
    received = agent.poll_once() + agent.poll_once()  # the foreign one is refused, not acted on
    assert value(metrics, "spot_agent_messages_received_total") == received == 2
    assert value(metrics, "spot_agent_outcomes_total", outcome="terminated") == 1
    assert value(metrics, "spot_agent_outcomes_total", outcome="foreign") == 1
    assert value(metrics, "spot_agent_stop_duration_seconds_count", driver="log") == 1
    assert value(metrics, "spot_agent_last_successful_poll_timestamp_seconds") >= int(before)


@pytest.mark.parametrize("driver", [Fails(), Raises()], ids=["fails", "raises"])
def test_a_failed_stop_and_a_raising_driver_count_as_failures_and_are_reported_failed(
    queues, driver
):
    metrics = AgentMetrics()
    queues.send(termination())
    agent = consumer(queues, driver, metrics)
    agent.poll_once()
    assert value(metrics, "spot_agent_outcomes_total", outcome="failed") == 1
    assert value(metrics, "spot_agent_failures_total", stage="stop") == 1
    assert value(metrics, "spot_agent_stop_duration_seconds_count", driver=driver.name) == 1
    [report] = queues.sent_reports()
    assert report["outcome"] == "failed"
    assert agent.poll_once() == 1  # not deleted: it comes back


class UnreachableSqs:
    def __init__(self) -> None:
        self.calls = 0

    def receive_message(self, **_request):
        self.calls += 1
        raise EndpointConnectionError(endpoint_url="https://sqs.us-east-1.amazonaws.com")


def test_the_loop_outlives_an_unreachable_queue_counts_it_and_keeps_ticking():
    metrics = AgentMetrics()
    sqs = UnreachableSqs()
    ticks = []
    agent = Consumer(sqs, "node-a", "q", "r", LogDriver(), metrics=metrics, retry_seconds=0)

    def tick():
        ticks.append(1)
        if len(ticks) == 3:
            agent.stop()

    agent.tick = tick
    agent.run()
    assert sqs.calls == 3
    assert value(metrics, "spot_agent_failures_total", stage="receive") == 3
    assert value(metrics, "spot_agent_last_successful_poll_timestamp_seconds") == 0


def arguments(**overrides) -> argparse.Namespace:
    return argparse.Namespace(**{"metrics_port": None, "metrics_address": "127.0.0.1",
                                 "metrics_textfile": None, **overrides})  # fmt: skip


def test_the_metrics_are_served_over_http_and_written_to_a_textfile(tmp_path, monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    metrics = AgentMetrics(("libvirt",))
    metrics.received.inc(3)
    textfile = tmp_path / "spot_agent.prom"
    tick = expose(arguments(metrics_textfile=textfile), metrics)
    tick()
    assert "spot_agent_messages_received_total 3.0" in textfile.read_text()
    server = metrics.serve(0, "127.0.0.1")
    try:
        url = f"http://127.0.0.1:{server.server_port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            page = response.read().decode()
    finally:
        server.shutdown()
    assert "spot_agent_messages_received_total 3.0" in page
    assert 'spot_agent_stop_duration_seconds_count{driver="libvirt"} 0.0' in page
    assert 'spot_agent_failures_total{stage="receive"} 0.0' in page


@pytest.fixture
def notify_socket(tmp_path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(5)
    yield sock, str(tmp_path / "notify")
    sock.close()


def test_sd_notify_sends_one_datagram_to_the_notify_socket(notify_socket):
    sock, path = notify_socket
    assert systemd.notify("READY=1", {"NOTIFY_SOCKET": path})
    assert sock.recv(1024) == b"READY=1"


def test_sd_notify_reaches_an_abstract_socket_too():
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        name = f"spot-agent-test-{id(sock)}"
        sock.bind("\0" + name)
        sock.settimeout(5)
        assert systemd.notify("WATCHDOG=1", {"NOTIFY_SOCKET": "@" + name})
        assert sock.recv(1024) == b"WATCHDOG=1"


def test_outside_systemd_or_with_its_socket_gone_nothing_breaks(tmp_path):
    assert not systemd.notify("READY=1", {})
    assert not systemd.notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "gone")})


def test_every_round_pings_the_watchdog(notify_socket, monkeypatch):
    sock, path = notify_socket
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    expose(arguments(), AgentMetrics())()
    assert sock.recv(1024) == b"WATCHDOG=1"


def test_the_watchdog_interval_is_read_for_this_process_only():
    assert systemd.watchdog_seconds({"WATCHDOG_USEC": "90000000"}) == 90
    assert systemd.watchdog_seconds({"WATCHDOG_USEC": "90000000", "WATCHDOG_PID": "1"}) is None
    assert systemd.watchdog_seconds({}) is None

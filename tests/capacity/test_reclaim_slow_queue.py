"""A slow or hanging SQS never turns a committed reclaim into a 5xx or a timeout.

The reclaim's SQS client is pointed at a socket that accepts connections and never answers
(the production client configuration, real timeouts). The reclaim answers 200 well inside
the function's timeout, the termination stays open on its workload, and the sweeper
delivers it once SQS answers again.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from types import ModuleType

import boto3
import pytest

from devstack import template
from devstack.api_events import event_file, list_units_event, reclaim_event
from devstack.functions import FakeContext, invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.settings import settings
from tests.capacity.test_reclaim_handler import standard_fleet
from tests.support import state
from tests.support.bodies import unidentified

pytestmark = pytest.mark.moto

BROKER = "Bearer vl_local_test_broker"


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("reclaim", "list_units", "sweeper")}


@pytest.fixture
def hanging_endpoint() -> Iterator[str]:
    """An HTTP endpoint that accepts every connection and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for connection in [*held, server]:
        connection.close()


def function_timeout_seconds() -> float:
    return float(template.document()["Globals"]["Function"]["Timeout"])


def test_a_hanging_sqs_leaves_a_committed_reclaim_a_fast_200_and_the_sweeper_delivers(
    functions, load_fleet, aws, hanging_endpoint, monkeypatch
):
    load_fleet(standard_fleet())
    invoke(functions["list_units"], list_units_event("node-a", BROKER))  # warm: key cached
    hanging = boto3.client("sqs", endpoint_url=hanging_endpoint, config=clients.SQS_CONFIG)
    with monkeypatch.context() as outage:
        outage.setattr(clients, "sqs", lambda: hanging)
        started = time.monotonic()
        body = {"unitIds": ["0000:04:00.0", "0000:05:00.0"]}
        result = invoke(functions["reclaim"], reclaim_event("node-a", "res-1", body, BROKER))
        elapsed = time.monotonic() - started
    print(f"reclaim with a hanging SQS answered in {elapsed:.2f} s")

    assert result.status == 200
    assert result.body["terminated"] == ["vm-span", "vm-spot-1"]
    # Bounded by the client's own timeouts, not by luck: one try, then the sweeper's turn.
    assert elapsed < function_timeout_seconds() / 2, elapsed
    for workload in ("vm-spot-1", "vm-span"):
        assert state.workload(aws, "node-a", workload)["openTermination"] == "open"

    # SQS answers again.
    monkeypatch.setenv("SWEEPER_GRACE_SECONDS", "0")
    settings.cache_clear()
    functions["sweeper"].lambda_handler(event_file("sweeper/scheduled.json"), FakeContext())
    sqs = boto3.client("sqs")
    delivered = state.drain(sqs, state.node_queue_url(aws, "node-a"))
    # (vm-term, terminating since the fleet was loaded, is delivered by the same pass.)
    assert {"vm-span", "vm-spot-1"} <= {m["workloadId"] for m in delivered}


def test_a_hanging_dynamodb_gets_the_contracts_5xx_before_the_function_times_out(
    functions, load_fleet, aws, hanging_endpoint, monkeypatch
):
    """No try starts that could outlast the invocation, and tries that time out are an
    outage: the request gives up with a 503 in the contract's shape (code internal) instead
    of letting API Gateway answer a timeout. With 5 s left the deadline stops it; with the
    whole 10 s, botocore's own three tries do."""
    load_fleet(standard_fleet())
    invoke(functions["list_units"], list_units_event("node-a", BROKER))  # warm: key cached
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", hanging_endpoint)
    clients.reset()
    event = reclaim_event("node-a", "res-1", {"unitIds": ["0000:04:00.0"]}, BROKER)
    for timeout_ms in (5_000, int(function_timeout_seconds() * 1000)):
        started = time.monotonic()
        result = functions["reclaim"].lambda_handler(event, FakeContext(timeout_ms=timeout_ms))
        elapsed = time.monotonic() - started
        print(
            f"hanging DynamoDB, {timeout_ms / 1000:g} s left: {result['statusCode']} in {elapsed:.1f} s"
        )
        assert elapsed < timeout_ms / 1000
        assert result["statusCode"] == 503
        assert unidentified(json.loads(result["body"])) == {
            "error": "the service could not answer in time; try again",
            "code": "internal",
        }
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB")
    clients.reset()
    assert state.reservation(aws, "node-a", "res-1")["releasedUnitIds"]  # nothing written


class FixedContext(FakeContext):
    """A context whose remaining time stands still (the deadline's clock is frozen too)."""

    def get_remaining_time_in_millis(self) -> int:
        return self.timeout_ms


@pytest.mark.parametrize(("left_ms", "status"), [(3_490, 503), (3_510, 200)])
def test_with_less_than_a_try_and_half_a_second_left_no_try_starts(
    functions, load_fleet, aws, monkeypatch, left_ms, status
):
    """A try takes up to 3 s, and half a second is kept back for the answer: with 3.49 s
    left the list gives up at once with the 503; with 3.51 s it reads and answers."""
    load_fleet(standard_fleet())
    monkeypatch.setattr(clients.time, "monotonic", lambda: 1000.0)
    event = list_units_event("node-a", BROKER)
    result = functions["list_units"].lambda_handler(event, FixedContext(timeout_ms=left_ms))
    assert result["statusCode"] == status, result["body"]
    if status == 503:
        assert json.loads(result["body"])["code"] == "internal"

"""Shared fixtures: an in-memory AWS (moto) provisioned from template.yaml, fleets loaded."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.loaders
import pytest
from moto import mock_aws

# The functions read these when their modules load (as in Lambda), before any fixture runs.
os.environ.update(
    {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "GpuReservationsTest",
        "POWERTOOLS_SERVICE_NAME": "reservations",
        "TABLE_NAME": "ReservationsTable",
        # The list signs its cursors with it (deployed: from a Secrets Manager secret).
        "CURSOR_SIGNING_KEY": "test-only-cursor-signing-key-0123456789",
        # The event relays put on it (the template's bus, named by its logical id locally).
        "EVENT_BUS_NAME": "EventBus",
    }
)

from devstack import fleets, moto_costs, template
from reservations.kernel.aws import clients
from reservations.kernel.observability import metrics

# The fixtures every folder may use, kept with the shared helpers: the use cases' fakes and
# fleet, the emulator the race tests fork against, and the end-to-end stack (started once).
pytest_plugins = ["tests.support.use_cases", "tests.support.emulator", "tests.support.e2e_fixtures"]


@pytest.fixture(autouse=True)
def _metrics_of_this_test_only() -> None:
    """Powertools keeps metrics in one store shared by every ``Metrics`` until a handler
    flushes them: what a test adds without a handler (a use case called directly) must not
    be printed by the next test's handler (tests share a worker process)."""
    metrics.clear_metrics()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "TABLE_NAME": "ReservationsTable",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "GpuReservationsTest",
        "POWERTOOLS_SERVICE_NAME": "reservations",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)  # moto answers AWS's own URLs
    monkeypatch.delenv("AWS_PROFILE", raising=False)


# botocore's service models and endpoint data, parsed once for every test: moto gives each
# test a fresh default session, whose own loader would parse them again (most of a test's
# set-up time). They are read-only data; a session only reads them.
_BOTOCORE_DATA = botocore.loaders.create_loader()


@pytest.fixture
def aws(aws_env: None) -> Iterator[Any]:
    """moto's in-memory AWS with template.yaml's tables; yields a DynamoDB client. Its
    transactions back up the items they name, not the whole table (``moto_costs``)."""
    moto_costs.install()
    with mock_aws():
        boto3.setup_default_session()
        boto3.DEFAULT_SESSION._session.register_component("data_loader", _BOTOCORE_DATA)
        clients.reset()
        from reservations.kernel.http.resolver import key_cache

        key_cache.clear()
        dynamodb = boto3.client("dynamodb")
        template.create_tables(dynamodb)
        template.create_queues(boto3.client("sqs"))
        template.create_event_buses(boto3.client("events"))
        yield dynamodb
        clients.reset()
        key_cache.clear()


@pytest.fixture
def load_fleet(aws: Any) -> Any:
    def load(document: dict[str, Any]) -> None:
        fleets.load_fleet(document, aws, boto3.client("sqs"))

    return load


def _count_calls(client: Any, service: str) -> Counter[str]:
    counter: Counter[str] = Counter()

    def count(model: Any, **_: Any) -> None:
        counter[model.name] += 1

    client.meta.events.register(f"before-call.{service}", count)
    return counter


@pytest.fixture
def dynamodb_calls(aws: Any) -> Counter[str]:
    """Counts the requests the functions' DynamoDB client sends, by operation."""
    return _count_calls(clients.dynamodb(), "dynamodb")


@pytest.fixture
def sqs_calls(aws: Any) -> Counter[str]:
    """Counts the requests the functions' SQS client sends, by operation."""
    return _count_calls(clients.sqs(), "sqs")


class SentRequests:
    """Every request any botocore client sent, counted at the endpoint (each HTTP attempt)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.items_read: list[tuple[int, int]] = []  # (Count, ScannedCount) of each Query
        self.bytes_read: list[int] = []  # the size of each DynamoDB response's body
        self.keys_asked: list[int] = []  # how many items each BatchGetItem asked for

    def by_service(self, service: str) -> Counter[str]:
        return Counter(operation for name, operation in self.sent if name == service)

    def clear(self) -> None:
        self.sent.clear()
        self.items_read.clear()
        self.bytes_read.clear()
        self.keys_asked.clear()


@pytest.fixture
def sent_requests(monkeypatch: pytest.MonkeyPatch) -> SentRequests:
    """Counts below every client, so Powertools', the functions' and any other client's
    requests are all seen (retries included: each attempt is one request)."""
    from botocore.endpoint import Endpoint

    recorder = SentRequests()
    original = Endpoint._do_get_response

    def counted(self: Any, request: Any, operation_model: Any, context: Any) -> Any:
        recorder.sent.append((operation_model.service_model.service_name, operation_model.name))
        if operation_model.name == "BatchGetItem":
            asked = json.loads(request.body)["RequestItems"].values()
            recorder.keys_asked.append(sum(len(table["Keys"]) for table in asked))
        result = original(self, request, operation_model, context)
        parsed = result[0][1] if result[0] else None
        if operation_model.service_model.service_name == "dynamodb" and result[0]:
            recorder.bytes_read.append(len(result[0][0].content))
        if operation_model.name == "Query" and parsed and "Count" in parsed:
            recorder.items_read.append((parsed["Count"], parsed["ScannedCount"]))
        return result

    monkeypatch.setattr(Endpoint, "_do_get_response", counted)
    return recorder

"""The local emulator in this process: moto's server with DynamoDB requests one at a time (the
race tests' and the installed agent's; a plugin of the root conftest, started once a session)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from devstack import fleets
from devstack.emulator import REGION, moto_app, provision, serve
from devstack.net import free_port
from reservations.kernel.aws import clients


@pytest.fixture(scope="session")
def emulator() -> Iterator[str]:
    port = free_port()
    servers = serve(moto_app(), ["127.0.0.1"], port)
    endpoint = f"http://127.0.0.1:{port}"
    provision(endpoint)
    yield endpoint
    for server in servers:
        server.shutdown()


@pytest.fixture
def emulated(emulator: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The functions' clients pointed at the emulator; yields the test's own clients."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": emulator,
        "TABLE_NAME": "ReservationsTable",
    }.items():
        monkeypatch.setenv(name, value)
    clients.reset()
    from reservations.kernel.http.resolver import key_cache

    key_cache.clear()
    dynamodb = boto3.client("dynamodb", endpoint_url=emulator)
    if "ReservationsTable" not in dynamodb.list_tables()["TableNames"]:
        # The server shares moto's backends with this process: an in-memory test run in
        # it since (its mock_aws ends with a reset) took the tables, queues and buses.
        provision(emulator)
    yield {"dynamodb": dynamodb, "sqs": boto3.client("sqs", endpoint_url=emulator)}
    clients.reset()


@pytest.fixture
def load_emulated_fleet(emulated: dict[str, Any]) -> Any:
    def load(document: dict[str, Any]) -> None:
        # The emulator is shared by every test of the session: a node loaded twice would
        # carry one test's writes into another's assertions.
        db = emulated["dynamodb"]
        for node in document["nodes"]:
            key = {"PK": {"S": f"NODE#{node['id']}"}, "SK": {"S": "#NODE"}}
            assert "Item" not in db.get_item(TableName="ReservationsTable", Key=key), (
                f"node {node['id']} is already in the shared emulator: give this test its own"
            )
        fleets.load_fleet(document, db, emulated["sqs"])

    return load

"""Requests per release and per cancel, counted at botocore's endpoint (every client, every
attempt): one strongly consistent Query and one TransactWriteItems, with or without an
Idempotency-Key; a release's dry run one Query; a replay and a kept refusal two."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import cancel_event, list_units_event, release_event
from devstack.functions import invoke, load_function

pytestmark = pytest.mark.moto

OWNER = "Bearer vl_local_test_writer"
WRITE = ["reservation.read", "reservation.capacity", "reservation.write"]
ONE_WRITE = [("dynamodb", "Query"), ("dynamodb", "TransactWriteItems")]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in ("release", "cancel", "list_units")}


@pytest.fixture
def node(load_fleet, functions) -> None:
    """A node of 8 units, all reserved by res-1, half of them running spot VMs; key cached."""
    ids = [f"0000:{i:02x}:00.0" for i in range(1, 9)]
    load_fleet(
        f.fleet(
            [
                f.node(
                    "node-a",
                    [f.unit(u) for u in ids],
                    [f.reservation("res-1", ids, releasedUnitIds=ids[:4])],
                    [f.workload(f"vm-{i}", [u]) for i, u in enumerate(ids[:4])],
                )
            ],
            extra_keys=[{"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE}],
        )
    )
    invoke(functions["list_units"], list_units_event("node-a", OWNER))  # a warm container


def _release(functions, body: dict[str, Any], key: str | None = None) -> Any:
    return invoke(functions["release"], release_event("node-a", "res-1", body, OWNER, key))


def _cancel(functions, key: str | None = None) -> Any:
    return invoke(functions["cancel"], cancel_event("node-a", "res-1", None, OWNER, key))


@pytest.mark.parametrize("key", [None, "budget-key"])
@pytest.mark.parametrize("units", [["0000:05:00.0"], ["0000:01:00.0"]])  # new, already released
def test_a_release_is_two_requests(functions, node, sent_requests, key, units):
    sent_requests.clear()
    assert _release(functions, {"unitIds": units}, key).status == 200
    assert sent_requests.sent == ONE_WRITE


def test_a_release_dry_run_is_one_request(functions, node, sent_requests):
    sent_requests.clear()
    assert _release(functions, {"unitIds": ["0000:05:00.0"], "dryRun": True}, "k").status == 200
    assert sent_requests.sent == [("dynamodb", "Query")]


@pytest.mark.parametrize("key", [None, "budget-key"])
def test_a_cancel_is_two_requests(functions, node, sent_requests, key):
    sent_requests.clear()
    assert _cancel(functions, key).status == 200
    assert sent_requests.sent == ONE_WRITE


def test_replays_are_two_requests(functions, node, sent_requests):
    release = _release(functions, {"unitIds": ["0000:06:00.0"]}, "r")
    sent_requests.clear()
    assert _release(functions, {"unitIds": ["0000:06:00.0"]}, "r").body_text == release.body_text
    assert sent_requests.sent == ONE_WRITE  # the record cancels the transaction
    cancel = _cancel(functions, "c")
    sent_requests.clear()
    assert _cancel(functions, "c").body_text == cancel.body_text
    # Now cancelled, and so in the node's history: the repeat reads it there (one GetItem
    # more, on this path alone), is refused, and the refusal's PutItem meets the first answer.
    assert sent_requests.sent == [
        ("dynamodb", "Query"),
        ("dynamodb", "GetItem"),
        ("dynamodb", "PutItem"),
    ]


def test_a_kept_refusal_is_two_requests(functions, node, sent_requests):
    for _ in range(2):  # the refusal, then its replay
        sent_requests.clear()
        assert _release(functions, {"unitIds": ["0000:09:00.0"]}, "refused-1").status == 422
        assert sent_requests.sent == [("dynamodb", "Query"), ("dynamodb", "PutItem")]


def test_a_kept_refusal_on_an_ended_reservation_reads_its_history_item(
    functions, node, sent_requests
):
    """Cancelled, the reservation is in the node's history: a write on it reads it there
    (one GetItem more than on a reservation in the node's partition, on this path alone)."""
    assert _cancel(functions).status == 200
    with_history = [("dynamodb", "Query"), ("dynamodb", "GetItem"), ("dynamodb", "PutItem")]
    for _ in range(2):  # the refusal, then its replay
        sent_requests.clear()
        assert _cancel(functions, "refused").status == 409
        assert sent_requests.sent == with_history
        sent_requests.clear()
        assert _release(functions, {"unitIds": ["0000:05:00.0"]}, "refused-2").status == 409
        assert sent_requests.sent == with_history

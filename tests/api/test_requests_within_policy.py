"""Every DynamoDB request a function sends is one its IAM policy in template.yaml allows.

moto enforces no IAM, so a request outside the policy passes every other test and is an
AccessDenied in AWS. Here the functions run in-process over moto; each request their DynamoDB
client sends is recorded with the function that sent it, turned into what IAM evaluates (the
action, the table or index it names, the partition keys it touches: a transaction's parts
each on their own) and checked against that function's statements: its actions, its
resource (an index only by its own name) and its ``dynamodb:LeadingKeys`` patterns.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatch
from functools import cache
from types import ModuleType
from typing import Any

import boto3
import pytest

from devstack import fleet_documents as f
from devstack import template
from devstack.api_events import (
    cancel_event,
    create_event,
    event_file,
    fleet_event,
    node_event,
    place_event,
    reclaim_event,
)
from devstack.functions import FakeContext, invoke, load_function
from reservations.kernel.aws import clients
from reservations.kernel.event_log import SETTLE_WINDOW
from reservations.kernel.settings import settings
from reservations.webhooks.models.api import SubscriptionCreate
from reservations.webhooks.models.domain import SigningSecrets, Subscription
from reservations.webhooks.table.subscriptions import SubscriptionTable
from tests.support import event_scenario as s
from tests.support.event_table import StreamRelay
from tests.support.fleet_index import FleetStream

pytestmark = pytest.mark.moto

UNITS = [f"0000:{0x10 + i:02x}:00.0" for i in range(8)]
KEYS = [
    {"key": "vl_local_test_node_operator", "orgId": "org-platform", "permissions": ["node.write"]},
    {"key": "vl_local_test_writer", "orgId": "org-acme",
     "permissions": ["reservation.read", "reservation.write"]},
    {"key": "vl_local_test_placer", "orgId": "org-platform", "permissions": ["workload.place"]},
]  # fmt: skip
START = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
TABLE = "ReservationsTable"
TRANSACTION_PARTS = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem",
                     "ConditionCheck": "ConditionCheckItem"}  # fmt: skip


# --- what a request asks of IAM ---------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One action as IAM evaluates it: on the table (``index`` None) or an index, with the
    partition key values it touches (``dynamodb:LeadingKeys``)."""

    function: str
    action: str
    index: str | None
    keys: tuple[str, ...]

    def __str__(self) -> str:
        on = f" on index {self.index}" if self.index else ""
        prefixes = sorted({_prefix(key) for key in self.keys}) or ["(no key)"]
        sender = f"{logical_id(self.function)} (functions/{self.function})"
        return f"{sender}: {self.action}{on} {', '.join(prefixes)}"


def _prefix(key: str) -> str:
    """``NODEEVT#node-a`` as ``NODEEVT#*`` (a key without ``#`` as it is: ``PLATFORM``)."""
    return key.split("#", 1)[0] + "#*" if "#" in key else key


def _pk(item: dict[str, Any]) -> str:
    return str(item["PK"]["S"])


@cache
def _hash_keys() -> dict[str | None, str]:
    """The partition key attribute of the table (None) and of each index, by index name."""
    properties = template.resources()[TABLE]["Properties"]
    found: dict[str | None, str] = {None: "PK"}
    for index in properties.get("GlobalSecondaryIndexes", []):
        [hash_key] = [k for k in index["KeySchema"] if k["KeyType"] == "HASH"]
        found[index["IndexName"]] = hash_key["AttributeName"]
    return found


def _query_keys(body: dict[str, Any]) -> tuple[str, ...]:
    """The partition key a Query names: its key condition's equality on the hash key (and,
    on the table, the page it starts after)."""
    names = body.get("ExpressionAttributeNames", {})
    values = body.get("ExpressionAttributeValues", {})
    hash_key = _hash_keys()[body.get("IndexName")]
    keys = [
        str(next(iter(values[value].values())))
        for name, value in re.findall(r"([#\w]+)\s*=\s*(:\w+)", body["KeyConditionExpression"])
        if names.get(name, name) == hash_key
    ]
    if "ExclusiveStartKey" in body and "IndexName" not in body:
        keys.append(_pk(body["ExclusiveStartKey"]))
    return tuple(keys)


def _requests(function: str, operation: str, body: dict[str, Any]) -> list[Request]:
    if operation == "TransactWriteItems":
        return [
            Request(function, f"dynamodb:{TRANSACTION_PARTS[kind]}", None,
                    (_pk(part.get("Key") or part["Item"]),))
            for entry in body["TransactItems"]
            for kind, part in entry.items()
        ]  # fmt: skip
    if operation == "BatchWriteItem":
        writes = [w for table in body["RequestItems"].values() for w in table]
        keys = [_pk(w["PutRequest"]["Item"] if "PutRequest" in w else w["DeleteRequest"]["Key"])
                for w in writes]  # fmt: skip
    elif operation == "BatchGetItem":
        keys = [_pk(key) for table in body["RequestItems"].values() for key in table["Keys"]]
    elif operation == "Query":
        keys = list(_query_keys(body))
    else:
        keys = [_pk(body[field]) for field in ("Key", "Item") if field in body]
    return [Request(function, f"dynamodb:{operation}", body.get("IndexName"), tuple(keys))]


# --- what the template allows -----------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    """One Allow statement's DynamoDB actions on the table (``index`` None) or an index,
    for the keys its LeadingKeys patterns match (None: no condition, any key)."""

    actions: frozenset[str]
    index: str | None
    patterns: tuple[str, ...] | None

    def allows(self, request: Request) -> bool:
        if request.action not in self.actions or (request.index is None) != (self.index is None):
            return False
        if self.index is not None and not fnmatch(str(request.index), self.index):
            return False
        if self.patterns is None:
            return True
        return bool(request.keys) and all(
            any(fnmatch(key, pattern) for pattern in self.patterns) for key in request.keys
        )


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _resource_index(resource: Any) -> tuple[bool, str | None]:
    """Whether the resource is the table or one of its indexes, and which index."""
    if resource == {"Fn::GetAtt": [TABLE, "Arn"]}:
        return True, None
    text = resource.get("Fn::Sub", "") if isinstance(resource, dict) else ""
    prefix = f"${{{TABLE}.Arn}}/index/"
    return (True, text.removeprefix(prefix)) if text.startswith(prefix) else (False, None)


def _grants(statement: dict[str, Any]) -> Iterator[Grant]:
    actions = frozenset(a for a in _listed(statement["Action"]) if a.startswith("dynamodb:"))
    condition = statement.get("Condition", {}).get("ForAllValues:StringLike", {})
    patterns = condition.get("dynamodb:LeadingKeys")
    for resource in _listed(statement["Resource"]):
        on_table, index = _resource_index(resource)
        if statement["Effect"] == "Allow" and actions and on_table:
            yield Grant(actions, index, None if patterns is None else tuple(_listed(patterns)))


@cache
def logical_id(function: str) -> str:
    """The template's function of that name (an endpoint's, or functions/<function>/)."""
    return template.function_id(function)


@cache
def policy(function: str) -> tuple[Grant, ...]:
    """The DynamoDB grants of the function's statements on the table and its indexes."""
    properties = template.of_type("AWS::Serverless::Function")[logical_id(function)]
    statements = [
        statement
        for document in properties.get("Policies") or []
        if isinstance(document, dict)
        for statement in document.get("Statement", [])
    ]
    return tuple(grant for statement in statements for grant in _grants(statement))


def allowed(request: Request) -> bool:
    return any(grant.allows(request) for grant in policy(request.function))


def test_the_check_refuses_what_the_policies_do_not_grant():
    def may(function: str, action: str, index: str | None, *keys: str) -> bool:
        return allowed(Request(function, f"dynamodb:{action}", index, keys))

    assert may("list_reservations", "Query", "NodeReservations", "NODE#node-a")
    assert not may("list_reservations", "Query", "LiveReservationEnds", "NODE#node-a")
    assert not may("list_reservations", "Query", None, "NODEEVT#node-a")
    assert may("event_backlog", "Query", "UnrelayedEvents", "pending")  # no condition
    assert not may("reclaim", "PutItem", None, "NODE#node-a")
    assert not may("reclaim", "Scan", None)
    assert not may("event_relay", "BatchWriteItem", None, "ORGEVT#org-a", "NODEEVT#node-a")
    transaction = {"TransactItems": [
        {"Put": {"Item": {"PK": {"S": "NODEEVT#node-a"}}}},
        {"ConditionCheck": {"Key": {"PK": {"S": "IDEMPOTENCY#k"}}}},
    ]}  # fmt: skip
    parts = _requests("reclaim", "TransactWriteItems", transaction)
    assert [(r.action, r.keys) for r in parts] == [
        ("dynamodb:PutItem", ("NODEEVT#node-a",)),
        ("dynamodb:ConditionCheckItem", ("IDEMPOTENCY#k",)),
    ]


# --- recording --------------------------------------------------------------------------------


class Recorder:
    """The requests the functions' DynamoDB client sends while a function runs."""

    def __init__(self) -> None:
        self.running: str | None = None
        self.requests: list[Request] = []
        clients.dynamodb().meta.events.register("before-call.dynamodb", self._record)

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if self.running is not None:
            body = json.loads(params["body"] or b"{}")
            self.requests.extend(_requests(self.running, model.name, body))

    @contextmanager
    def run(self, function: str) -> Iterator[None]:
        self.running = function
        try:
            yield
        finally:
            self.running = None

    def disallowed(self) -> list[str]:
        """Each kind of recorded request no statement of its function allows, with how many
        times it was sent."""
        refused = Counter(str(r) for r in self.requests if not allowed(r))
        return [f"{request}  (x{count})" for request, count in sorted(refused.items())]

    def functions(self) -> set[str]:
        return {r.function for r in self.requests}


def assert_within_policies(recorder: Recorder) -> None:
    disallowed = recorder.disallowed()
    assert not disallowed, (
        f"{len(disallowed)} kind(s) of DynamoDB request outside the sender's IAM policy "
        "(AccessDenied in AWS):\n  " + "\n  ".join(disallowed)
    )


# --- the functions at work ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("put_node", "event_relay", "event_backlog", "reclaim", "create_reservation",
             "place_workload", "fleet_indexer", "list_fleet_reservations", "cancel")  # fmt: skip
    return {name: load_function(name) for name in names}


@pytest.fixture
def recorder(aws: Any) -> Recorder:
    return Recorder()


@pytest.fixture
def node_a(aws: Any, load_fleet: Any) -> Any:
    """node-a: res-1 (org-broker) holds the first four units, all lent, a spot VM on the
    first; res-2 (org-reclaimer) holds the first from tomorrow; res-3 the fifth; the rest
    free. Every key may read both feeds."""
    reservations = [
        f.reservation("res-1", UNITS[:4], releasedUnitIds=UNITS[:4]),
        f.reservation("res-2", UNITS[:1], managingOrgIds=["org-reclaimer"],
                      allowedOrgIds=["org-lab2"], startsAt=f.days(1)),
        f.reservation("res-3", UNITS[4:5]),
    ]  # fmt: skip
    node = f.node("node-a", [f.unit(u) for u in UNITS], reservations,
                  [f.workload("vm-0", UNITS[:1])])  # fmt: skip
    load_fleet(s.with_feed_permissions(f.fleet([node], extra_keys=[*s.fleet_keys(), *KEYS])))
    return aws


@pytest.fixture
def subscribed(node_a: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The node owner's org has a webhook subscription to every event type."""
    url = boto3.client("sqs").get_queue_url(QueueName="WebhookDeliveryQueue")["QueueUrl"]
    monkeypatch.setenv("WEBHOOK_DELIVERY_QUEUE_URL", url)
    settings.cache_clear()
    made = Subscription("whsub-owner0000000000000", "org-acme", "https://hooks.example.com/o",
                        SigningSecrets("whsec_x"), datetime.now(UTC))  # fmt: skip
    SubscriptionTable().commit(SubscriptionCreate("w-owner", made, 0))
    yield
    settings.cache_clear()


def update_the_node(functions: dict[str, ModuleType], recorder: Recorder) -> None:
    """The first unit becomes another model: res-1 and res-2 go under review."""
    units = [f.unit(UNITS[0], gpuModelId="nvidia-b200"), *(f.unit(u) for u in UNITS[1:])]
    body = {"ownerOrgId": "org-acme", "topologyGen": 2, "units": units}
    with recorder.run("put_node"):
        answer = invoke(functions["put_node"], node_event("node-a", body, bearer("node_operator")))
    assert answer.status == 200, answer.body_text


def bearer(name: str) -> str:
    return f"Bearer vl_local_test_{name}"


def test_the_stream_relay_relaying_a_node_updates_reviews_asks_only_what_it_may(
    node_a, subscribed, functions, recorder
):
    update_the_node(functions, recorder)
    stream = StreamRelay(node_a, functions["event_relay"])
    with recorder.run("event_relay"):
        while stream.run():  # the update, then the reviews it derived, until drained
            pass
        for batch in stream.invocations:  # every batch handed over again (a retry)
            functions["event_relay"].lambda_handler(batch, FakeContext())
    assert {"put_node", "event_relay"} <= recorder.functions()
    assert_within_policies(recorder)


def test_the_backlog_relay_relaying_a_node_updates_reviews_asks_only_what_it_may(
    node_a, subscribed, functions, recorder, monkeypatch
):
    grace = timedelta(seconds=settings().event_relay_grace_seconds)
    later = datetime.now(UTC) + SETTLE_WINDOW + grace
    monkeypatch.setattr(functions["event_backlog"], "utc_now", lambda: later)
    update_the_node(functions, recorder)
    scheduled = event_file("event_backlog/scheduled.json")
    passes = []
    with recorder.run("event_backlog"):
        for _ in range(4):  # the update, the reviews it derived, then nothing left
            passes.append(functions["event_backlog"].lambda_handler(scheduled, FakeContext()))
    assert passes[0]["relayed"] >= 1
    assert passes[-1].get("relayed", 0) == 0, passes  # a count of none is left out
    assert_within_policies(recorder)


def _reclaim() -> dict[str, Any]:
    body = {"unitIds": UNITS[:2], "reason": "maintenance"}
    return reclaim_event("node-a", "res-1", body, bearer("broker"), "reclaim-1")


def _create() -> dict[str, Any]:
    body = {"unitIds": UNITS[5:6], "allowedOrgIds": ["org-lab"], "startsAt": f.iso(START),
            "endsAt": f.iso(START + timedelta(hours=1))}  # fmt: skip
    return create_event("node-a", body, bearer("writer"), "create-1")


def _place() -> dict[str, Any]:
    body = {"id": "vm-9", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
            "unitIds": UNITS[1:2]}  # fmt: skip
    return place_event("node-a", body, bearer("placer"), "place-1")


@pytest.mark.parametrize(
    ("function", "event", "status"),
    [("reclaim", _reclaim, 200), ("create_reservation", _create, 201),
     ("place_workload", _place, 201)],
)  # fmt: skip
def test_a_write_and_its_replay_ask_only_what_the_function_may(
    node_a, functions, recorder, function, event, status
):
    with recorder.run(function):
        first = invoke(functions[function], event())
        again = invoke(functions[function], event())  # the same idempotency key: the answer
    assert first.status == status, first.body_text
    assert again.status == status, again.body_text
    assert function in recorder.functions()
    assert_within_policies(recorder)


def test_the_fleet_indexer_and_the_fleet_list_ask_only_what_they_may(node_a, functions, recorder):
    """The indexer over the load, a create, a cancel (to the history) and a new owner (a
    node's reservations indexed again), every record twice; then the fleet list's pages,
    live and ended, as the operator and as an org."""
    stream = FleetStream(node_a, functions["fleet_indexer"])
    with recorder.run("fleet_indexer"):
        stream.run()
    assert invoke(functions["create_reservation"], _create()).status == 201
    cancel = cancel_event("node-a", "res-3", None, bearer("writer"))
    assert invoke(functions["cancel"], cancel).status == 200
    body = {"ownerOrgId": "org-other", "topologyGen": 1, "units": [f.unit(u) for u in UNITS]}
    answer = invoke(functions["put_node"], node_event("node-a", body, bearer("node_operator")))
    assert answer.status == 200, answer.body_text
    with recorder.run("fleet_indexer"):
        stream.run()
        for batch in stream.batches:  # every batch handed over again (a retry)
            functions["fleet_indexer"].lambda_handler(batch, FakeContext())
    with recorder.run("list_fleet_reservations"):
        for key in (bearer("writer"), "Bearer vl_local_test_operator"):
            for query in ({}, {"status": "cancelled,expired,active", "limit": "1"}):
                listed = invoke(functions["list_fleet_reservations"], fleet_event(key, query))
                assert listed.status == 200, listed.body_text
    assert {"fleet_indexer", "list_fleet_reservations"} <= recorder.functions()
    assert_within_policies(recorder)

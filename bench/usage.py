"""What one page of ``GET /v1/usage`` reads, through the real handler in-process over moto:
one day's rows, asked by the node's owner (its key cached), for one named node whose past
differs (ended reservations in its history; events in its feed long before the day), and
without ``nodeId`` for an org of 1 and of 50 nodes (the fleet index path).

Counted at the botocore level on the function's own client (``bench.costs.Meter``): the
requests by operation, and the items DynamoDB evaluated with their size, which is what it
bills read units on (a projected Query is billed on the whole items it reads, so the bench
reads them again whole, unhooked, to size them), and the bytes of each response's body.
The node's checkpoints are kept as the relay's usage outlet keeps them when it relays each
past event (``usage/checkpoints.py``). Besides, for a named node, the page's fold alone
(from its checkpoint), timed in this process (no DynamoDB, no moto): CPU on this machine.
:func:`growth` says what a page reads more for each 1,000 more past events.
A benchmark: it prints figures, and no test holds a time of it.
"""

from __future__ import annotations

import copy
import io
import os
import re
import statistics
import time
from collections import Counter
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from moto import mock_aws

from bench.costs import Meter, item_bytes, units
from bench.environment import ENV
from devstack import fleet_documents as f
from devstack import moto_costs, template
from devstack.api_events import usage_event
from devstack.fleets import load_fleet
from devstack.functions import FakeContext, load_function
from devstack.streams import Mapping, StreamPump
from reservations.kernel.aws import clients
from reservations.kernel.aws.codec import to_attributes
from reservations.kernel.aws.event_items import event_item
from reservations.kernel.envelope import Actor, EventContext, StoredEvent
from reservations.kernel.event_log import SETTLE_WINDOW, record_position
from reservations.nodes import node_events_pk
from reservations.nodes.models.partition import Node, Tier, Workload, WorkloadKind, WorkloadState
from reservations.nodes.rules.events import node_registered
from reservations.usage.checkpoints import UsageCheckpoints, checkpoint_hour
from reservations.usage.rules.facts import to_ms
from reservations.usage.rules.ledger import fold
from reservations.usage.table import UsageTable
from reservations.workloads.rules.events import workload_ended, workload_placed
from reservations_tools.fleet.history import batch_write

TABLE = ENV["TABLE_NAME"]
UNITS = [f"0000:{i:02x}:00.0" for i in range(1, 9)]
# (ended reservations in the node's history, events in its feed before the day).
PASTS = ((0, 0), (10_000, 0), (0, 1_000), (0, 10_000), (10_000, 10_000))
FLEETS = (1, 50)  # nodes of the org asking without nodeId
RETENTION_DAYS = 400  # the service's default HistoryRetentionDays
SPOT_ORG = "org-spotbuyer"


@dataclass(frozen=True)
class Asker:
    """A key of an org with ``usage.read`` alone (local to the bench)."""

    key: str
    org_id: str

    @property
    def document(self) -> dict[str, Any]:
        return {"key": self.key, "orgId": self.org_id, "permissions": ["usage.read"]}

    @property
    def authorization(self) -> str:
        return f"Bearer {self.key}"


OWNER = Asker("vl_local_only_bench_usage_owner", "org-acme")


def fleet_owner(nodes: int) -> Asker:
    """The org that owns ``nodes`` nodes, and nothing else."""
    return Asker(f"vl_local_only_bench_usage_fleet{nodes:02d}", f"org-fleet{nodes:02d}")


def node_id(ended: int, events: int) -> str:
    """Ids of one length, so that no byte read differs but the past's."""
    return f"node-u{ended:05d}-{events:05d}"


def _node(node: str, owner: str, ended: int = 0) -> dict[str, Any]:
    """8 units, res-1 holding them all with 4 released, a spot VM on each released one."""
    document: dict[str, Any] = f.node(
        node,
        [f.unit(u) for u in UNITS],
        [f.reservation("res-1", UNITS, releasedUnitIds=UNITS[:4])],
        [f.workload(f"vm-{i}", [u]) for i, u in enumerate(UNITS[:4])],
        owner=owner,
    )
    return document | {"generatedPastReservations": ended}


def past_events(node: str, count: int, before: datetime) -> list[StoredEvent]:
    """``count`` events of the node, as its changes would have written them, the last a day
    before ``before``: its registration (8 units of 1 GPU), then spot VMs placed and ended
    on its units, one event a minute."""
    if count == 0:
        return []
    first = before - timedelta(days=1, minutes=count)
    owner = OWNER.org_id

    def context(n: int) -> EventContext:
        at = first + timedelta(minutes=n)
        return EventContext(node, owner, f"bench-past-{n:06d}", at, Actor(SPOT_ORG, "key-bench"))

    registered = node_registered(
        context(0), Node(node, owner, topology_gen=1), UNITS, dict.fromkeys(UNITS, 1)
    )
    made = [registered]
    for n in range(1, count):
        vm = Workload(
            id=f"vm-past-{(n - 1) // 2:06d}",
            kind=WorkloadKind.VM,
            tier=Tier.SPOT,
            org_id=SPOT_ORG,
            unit_ids=(UNITS[(n - 1) // 2 % len(UNITS)],),
            state=WorkloadState.RUNNING,
            created_at=context(n).at,
        )
        placing = n % 2 == 1
        made.append(
            workload_placed(context(n), vm)
            if placing
            else workload_ended(context(n), vm, vm.unit_ids, gpus=1)
        )
    return made


def write_past(client: Any, events: list[StoredEvent]) -> None:
    """Each event into its node's feed with the item its change's transaction writes
    (``event_item``), positioned at its own moment, 25 to a BatchWriteItem."""
    requests = [
        {"PutRequest": {"Item": to_attributes(event_item(
            stored, node_events_pk(stored.event.node_id), RETENTION_DAYS,
            record_position(stored.event.time, stored.id)))}}
        for stored in events
    ]  # fmt: skip
    for start in range(0, len(requests), 25):
        batch_write(client, TABLE, requests[start : start + 25])


# Read evaluated: what DynamoDB bills a read on (the whole items) and how many there were.


def _unused_removed(params: dict[str, Any]) -> dict[str, Any]:
    """The request without names and values that no expression left in it uses."""
    expressions = ("KeyConditionExpression", "FilterExpression", "ProjectionExpression")
    text = " ".join(str(params.get(name, "")) for name in expressions)
    used = set(re.findall(r"[#:][A-Za-z0-9_]+", text))
    for kind in ("ExpressionAttributeNames", "ExpressionAttributeValues"):
        kept = {name: v for name, v in params.get(kind, {}).items() if name in used}
        params.pop(kind, None)
        if kept:
            params[kind] = kept
    return params


@dataclass
class ReadMeter(Meter):
    """The costs meter, and besides its units: items evaluated, their bytes, body bytes."""

    items: int = 0
    item_bytes: int = 0
    body_bytes: int = 0
    by_partition: Counter[str] = field(default_factory=Counter)

    def _response(self, parsed: dict[str, Any], model: Any, **kwargs: Any) -> None:
        http = kwargs.get("http_response")
        self.body_bytes += len(http.content) if http is not None else 0
        params = self.calls[-1][2]
        if model.name == "Query":
            self._query(params, parsed)
        elif model.name == "GetItem":
            self._get(params)
        elif model.name == "BatchGetItem":
            self._batch_get(params, parsed)
        else:
            super()._response(parsed, model, **kwargs)

    def _whole(self, params: dict[str, Any]) -> dict[str, Any]:
        whole = copy.deepcopy(params)
        for name in ("ProjectionExpression", "FilterExpression", "Select"):
            whole.pop(name, None)
        return _unused_removed(whole)

    def _query(self, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        whole = parsed
        if "ProjectionExpression" in params or "FilterExpression" in params:
            whole = self.raw.query(**self._whole(params))
            if whole.get("LastEvaluatedKey") != parsed.get("LastEvaluatedKey"):
                raise RuntimeError("the whole items read stopped elsewhere than the Query's")
        size = sum(item_bytes(i) for i in whole["Items"])
        self._count(len(whole["Items"]), size, units(size, 4096), params)
        pk = params["ExpressionAttributeValues"].get(":pk", {}).get("S", "?")
        self.by_partition[params.get("IndexName", "") + ":" + _kind(pk)] += 1

    def _get(self, params: dict[str, Any]) -> None:
        found = self.raw.get_item(**self._whole(params)).get("Item")
        size = item_bytes(found)
        self._count(int(found is not None), size, units(size, 4096), params)

    def _batch_get(self, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        for table, asked in params["RequestItems"].items():
            whole = self.raw.batch_get_item(RequestItems={table: self._whole(asked)})
            for item in whole["Responses"].get(table, []):  # each item rounded on its own
                self._count(1, item_bytes(item), units(item_bytes(item), 4096), asked)

    def _count(self, items: int, size: int, reads: int, params: dict[str, Any]) -> None:
        self.items += items
        self.item_bytes += size
        self.read_units += reads if params.get("ConsistentRead") else reads / 2


def _kind(pk: str) -> str:
    """A partition key's kind, without its node or org: ``NODEEVT#``, ``FLEET#…#ended``."""
    head, _, rest = pk.partition("#")
    return f"{head}#" + ("…#" + rest.rpartition("#")[2] if head == "FLEET" else "")


# The bench.


@dataclass
class Case:
    name: str
    group_by: str
    asker: Asker
    node: str | None  # None: without nodeId, the fleet index path
    rows: int  # the rows the page must answer
    ended: int = 0
    events: int = 0
    nodes: int = 1
    limit: int | None = None  # None: the default page


def cases(pasts: tuple[tuple[int, int], ...], fleets: tuple[int, ...]) -> list[Case]:
    """Each past by node and by reservation with ``nodeId``; without it, each org by node,
    and the smallest by reservation too (either reads a node it reaches with a GetItem of
    its list access and 3 Queries: its checkpoint, its load records, its feed; by
    reservation, a BatchGetItem more of the reservations that governed)."""
    found = []
    for group_by in ("node", "reservation"):
        for ended, events in pasts:
            found.append(Case(
                f"by {group_by}, nodeId, {ended:,} ended, {events:,} events",
                group_by, OWNER, node_id(ended, events), 1, ended, events,
            ))  # fmt: skip
        for n in fleets if group_by == "node" else fleets[:1]:
            found.append(Case(f"by {group_by}, no nodeId, org of {n} node{'s' * (n > 1)}",
                              group_by, fleet_owner(n), None, n, nodes=n))  # fmt: skip
    # A page of a fifth of the largest org's nodes (10 of 50): it reads one node more than
    # the page (that one says there is more), not the org's every node.
    n = fleets[-1]
    part = max(1, n // 5)
    found.append(Case(f"by node, no nodeId, org of {n} nodes, a page of {part}", "node",
                      fleet_owner(n), None, part, nodes=n, limit=part))  # fmt: skip
    return found


def _query(case: Case, day: datetime) -> dict[str, str]:
    query = {
        "from": f.iso(day),
        "to": f.iso(day + timedelta(days=1)),
        "granularity": "day",
        "groupBy": case.group_by,
    }
    return (query | ({"nodeId": case.node} if case.node else {})
            | ({"limit": str(case.limit)} if case.limit else {}))  # fmt: skip


def _index_fleet(dynamodb: Any) -> None:
    """The fleet index of everything written so far, from the table's stream, as the
    template's mapping hands it to the fleet indexer."""
    indexer = load_function("fleet_indexer")
    arn = dynamodb.describe_table(TableName=TABLE)["Table"]["LatestStreamArn"]

    def invoke(event: dict[str, Any]) -> set[str]:
        with redirect_stdout(io.StringIO()):
            indexer.lambda_handler(event, FakeContext())
        return set()

    mapping = Mapping.from_template(template.stream_mappings()["FleetIndexerStream"])
    pump = StreamPump(boto3.client("dynamodbstreams"), arn, mapping, invoke)
    while pump.poll():
        pass


def _set_up(
    dynamodb: Any, sqs: Any, pasts: tuple[tuple[int, int], ...], fleets: tuple[int, ...]
) -> float:
    """The fleet: the orgs' nodes first (indexed), then the nodes with a past (their
    history is not indexed: they are only asked for by nodeId). When it was loaded."""
    keys = [OWNER.document, *(fleet_owner(n).document for n in fleets)]
    orgs = [_node(f"node-f{n:02d}-{i:02d}", fleet_owner(n).org_id)
            for n in fleets for i in range(n)]  # fmt: skip
    load_fleet(f.fleet(orgs, keys), dynamodb, sqs)
    _index_fleet(dynamodb)
    nodes = [_node(node_id(ended, events), OWNER.org_id, ended) for ended, events in pasts]
    load_fleet(f.fleet(nodes, keys), dynamodb, sqs)
    loaded = time.time()
    for ended, events in pasts:
        made = past_events(node_id(ended, events), events, datetime.now(UTC))
        write_past(dynamodb, made)
        keep_checkpoints(node_id(ended, events), made)
    return loaded


def keep_checkpoints(node: str, events: list[StoredEvent]) -> None:
    """The node's checkpoints as the relay's usage outlet keeps them when it relays each
    event right after its moment: the one of the last hour that began two minutes or more
    before it (the page then reads at most about an hour of events before its day)."""
    outlet = UsageCheckpoints(UsageTable())
    for hour in sorted({checkpoint_hour(e.event.time) for e in events}):
        outlet.keep(node, hour)


def _call(function: Any, case: Case, query: dict[str, str], rows: int | None = None) -> None:
    """One invocation; insists on a 200 and on the case's rows (``rows`` None: the case's)."""
    event = usage_event(case.asker.authorization, query)
    with redirect_stdout(io.StringIO()):  # Powertools' metrics (EMF)
        response = function.lambda_handler(event, FakeContext())
    if response["statusCode"] != 200:
        raise RuntimeError(f"{case.name}: {response['statusCode']} {response.get('body')}")
    wanted = case.rows if rows is None else rows
    if (found := response["body"].count('"unitMs"')) != wanted:
        raise RuntimeError(f"{case.name}: {found} rows, not {wanted}: {response['body'][:300]}")


def _fold_ms(node: str, day: datetime, as_of: int, runs: int) -> float:
    """The page's fold alone, from the node's checkpoint before the day, in this process (no
    DynamoDB): median ms."""
    table = UsageTable()
    carried = table.checkpoint(node, to_ms(day))
    events = table.node_history(node, carried.at if carried else None, as_of)
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fold(node, events, as_of, since=carried)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def run(
    pasts: tuple[tuple[int, int], ...] = PASTS, fleets: tuple[int, ...] = FLEETS, runs: int = 3
) -> list[dict[str, Any]]:
    """One row per case: what one page reads (requests, items, bytes, read units), and for
    a named node the fold of its feed alone (median of ``runs``)."""
    os.environ.update(ENV)
    moto_costs.install()
    with mock_aws():
        clients.reset()
        dynamodb, sqs = boto3.client("dynamodb"), boto3.client("sqs")
        template.create_tables(dynamodb)
        template.create_queues(sqs)
        template.create_event_buses(boto3.client("events"))
        loaded = _set_up(dynamodb, sqs, pasts, fleets)
        # The watermark is now less the settle window: past the load, so the day has a row.
        time.sleep(max(0.0, loaded + SETTLE_WINDOW.total_seconds() + 1 - time.time()))
        as_of = datetime.now(UTC) - SETTLE_WINDOW
        day = as_of.replace(hour=0, minute=0, second=0, microsecond=0)
        function = load_function("list_usage")
        rows = []
        for case in cases(pasts, fleets):
            query = _query(case, day)
            # Its key read and cached (for 60 s) by a page of a node that is not there.
            _call(function, case, query | {"groupBy": "node", "nodeId": "node-none"}, 0)
            meter = ReadMeter(dynamodb)
            with meter.attached(clients.dynamodb()):
                _call(function, case, query)
            fold_ms = _fold_ms(case.node, day, to_ms(as_of), runs) if case.node else None
            rows.append({
                "case": case.name, "groupBy": case.group_by, "nodeId": case.node is not None,
                "ended": case.ended, "events": case.events, "nodes": case.nodes,
                "requests": dict(meter.requests), "partitions": dict(meter.by_partition),
                "items": meter.items, "item_bytes": meter.item_bytes,
                "body_bytes": meter.body_bytes, "read_units": meter.read_units,
                "fold_ms": fold_ms, "runs": runs,
            })  # fmt: skip
        clients.reset()
        return rows


def growth(rows: list[dict[str, Any]], group_by: str) -> dict[str, float]:
    """What a page reads more for each 1,000 more events in the node's past, between the
    rows of the two largest pasts (no ended reservations): 0 when the page reads only its
    periods' changes, as the checkpoints make it."""
    by_events = {r["events"]: r for r in rows if r["groupBy"] == group_by and r["nodeId"]
                 and r["ended"] == 0}  # fmt: skip
    low, high = (by_events[e] for e in sorted(by_events)[-2:])
    per = 1000 / (high["events"] - low["events"])
    out = {name: (high[name] - low[name]) * per
           for name in ("items", "item_bytes", "read_units")}  # fmt: skip
    out["from"], out["to"] = low["events"], high["events"]
    return out

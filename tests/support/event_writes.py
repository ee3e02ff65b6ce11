"""Events made by the real writes, in-process over moto: every type of the contract's table,
each by the call (or the report, or the sweeper's flag) that makes it, on node-a, with an
org for every kind of caller of ``event_scenario.CALLERS``; and who may see each one, by
hand from the contract's table (not from the rules it checks).

node-a is registered by the operator for org-acme. res-1 (units 04, 05) is managed by
org-broker for org-lab; res-2 (unit 06) by org-reclaimer for org-lab2. vm-1 (spot, on 06)
and vm-2 (on-demand, on 07) run for org-spotbuyer; res-2's reclaim terminates vm-1, which
its node reports terminated; vm-4 (spot, on 05) is terminated by res-1's reclaim and its
termination flagged stuck. An update changes 04 (res-1 to review), the operator
re-affirms res-1, the owner gives res-1 a contract reference (PATCH) and cancels res-2.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from devstack import fleet_documents as f
from devstack.api_events import (
    cancel_event,
    create_event,
    end_event,
    node_event,
    place_event,
    reaffirm_event,
    reclaim_event,
    release_event,
    update_event,
)
from devstack.functions import FakeContext, invoke
from devstack.sqs_events import sqs_event
from reservations.events.table.feeds import pending_event_from_item
from reservations.events.table.outlets import DerivedEvents
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.nodes.table.keys import node_events_pk
from reservations.terminations.sweeper import stuck_event
from reservations.terminations.table.store import TerminationTable
from tests.support import state

NODE = "node-a"
U4, U5, U6, U7 = "0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:07:00.0"
UNITS = [U4, U5, U6, U7]
# Keys that write (the scenario's own keys read): the operator's, the owner's, and the
# reclaimer's (which manages res-2).
OPERATOR = "Bearer vl_local_test_operator_writes"
OWNER = "Bearer vl_local_test_owner_writes"
BROKER = "Bearer vl_local_test_broker_writes"
RECLAIMER = "Bearer vl_local_test_reclaimer_writes"
WRITER_KEYS = [
    {"key": "vl_local_test_operator_writes", "orgId": "org-platform",
     "permissions": ["node.write", "workload.place", "reservation.write",
                     "reservation.capacity", "reservation.read"]},
    {"key": "vl_local_test_owner_writes", "orgId": "org-acme",
     "permissions": ["reservation.write", "reservation.capacity", "reservation.read"]},
    {"key": "vl_local_test_broker_writes", "orgId": "org-broker",
     "permissions": ["reservation.capacity", "reservation.read"]},
    {"key": "vl_local_test_reclaimer_writes", "orgId": "org-reclaimer",
     "permissions": ["reservation.capacity", "reservation.read"]},
]  # fmt: skip

# Who sees each event, by caller kind (event_scenario.CALLERS), by type and subject.
_NODE_ONLY = {"operator", "owner"}
_RES_1 = {"operator", "owner", "manager", "audience"}  # res-1's managers and audience
_RES_2 = {"operator", "owner", "reclaimer"}  # res-2's (its audience org-lab2 is no kind)
_WORKLOAD = {"operator", "owner", "workload_org"}


def viewers(event: dict[str, Any], res_1: str) -> set[str]:
    """The contract's table: who may see this event of node-a (``res_1``: res-1's id)."""
    kind, subject = event["type"], event["subject"]
    if kind.startswith("node.") or kind == "workload.termination_stuck":
        return _NODE_ONLY
    if kind.startswith("reservation."):
        return _RES_1 if subject == f"reservations/{res_1}" else _RES_2
    if kind in ("workload.termination_requested", "workload.terminated"):
        reclaimers = {"vm-1": "reclaimer", "vm-4": "manager"}  # res-2's, res-1's managers
        return _WORKLOAD | {reclaimers[subject.removeprefix("workloads/")]}
    return _WORKLOAD


def _node(generation: int, model: str = "nvidia-h100-sxm5-80gb") -> dict[str, Any]:
    units = [f.unit(U4, gpuModelId=model), *(f.unit(u) for u in UNITS[1:])]
    return {"ownerOrgId": "org-acme", "topologyGen": generation, "units": units}


def _placement(workload_id: str, tier: str, unit: str) -> dict[str, Any]:
    return {"id": workload_id, "kind": "vm", "tier": tier, "orgId": "org-spotbuyer",
            "unitIds": [unit]}  # fmt: skip


class Writer:
    """The calls, each through its function's real handler; every answer must be a 2xx."""

    def __init__(self, functions: Callable[[str], ModuleType], dynamodb: Any) -> None:
        self.functions = functions
        self.dynamodb = dynamodb

    def call(self, function: str, event: dict[str, Any]) -> Any:
        result = invoke(self.functions(function), event)
        assert 200 <= result.status < 300, (function, result.status, result.body_text)
        return result

    def create(self, unit_ids: list[str], managers: list[str], audience: list[str]) -> str:
        body = {"unitIds": unit_ids, "managingOrgIds": managers, "allowedOrgIds": audience}
        return str(self.call("create_reservation", create_event(NODE, body, OWNER)).body["id"])

    def report_terminated(self, workload_id: str) -> None:
        """The node's report, through the reports function as its queue hands it over."""
        termination_id = state.workload(self.dynamodb, NODE, workload_id)["terminationId"]
        report = {"version": 1, "type": "termination-report", "terminationId": termination_id,
                  "nodeId": NODE, "workloadId": workload_id, "outcome": "terminated",
                  "reportedAt": datetime.now(UTC).isoformat().replace("+00:00", "Z")}  # fmt: skip
        message = {"MessageId": "m-1", "ReceiptHandle": "r-1", "Body": json.dumps(report)}
        event = sqs_event([message], "arn:aws:sqs:us-east-1:000000000000:reports")
        response = self.functions("termination_reports").lambda_handler(event, FakeContext())
        assert response == {"batchItemFailures": []}

    def derive_reviews(self) -> None:
        """The relay's outlet for the node's updates: their reviews written into its feed
        (a reservation re-affirmed before the relay reached it gets none, as decided)."""
        pages = self.dynamodb.get_paginator("query").paginate(
            TableName=state.TABLE,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues=to_attributes({":pk": node_events_pk(NODE)}),
        )
        items = [from_attributes(i) for page in pages for i in page["Items"]]
        updates = [pending_event_from_item(i).stored for i in items if i["type"] == "node.updated"]
        assert DerivedEvents().deliver(updates) == set()

    def flag_stuck(self, workload_id: str) -> None:
        """The sweeper's flag, as it writes it once a termination went unanswered."""
        table = TerminationTable()
        termination = table.read(NODE, workload_id)
        assert termination is not None
        stuck = stuck_event(termination, table.node_owner(NODE), datetime.now(UTC))
        assert table.mark_stuck(termination, datetime.now(UTC), stuck)


def write_every_type(writer: Writer) -> dict[str, str]:
    """Every type of event on node-a, by its write; the two reservations' ids."""
    w = writer
    w.call("put_node", node_event(NODE, _node(1), OPERATOR))
    res_1 = w.create([U4, U5], ["org-broker"], ["org-lab"])
    res_2 = w.create([U6], ["org-reclaimer"], ["org-lab2"])
    w.call("release", release_event(NODE, res_1, {"unitIds": [U5]}, BROKER))
    w.call("release", release_event(NODE, res_2, {"unitIds": [U6]}, RECLAIMER))
    w.call("place_workload", place_event(NODE, _placement("vm-1", "spot", U6), OPERATOR))
    w.call("place_workload", place_event(NODE, _placement("vm-2", "on-demand", U7), OPERATOR))
    w.call("place_workload", place_event(NODE, _placement("vm-4", "spot", U5), OPERATOR))
    body = {"unitIds": [U6], "reason": "lab needs them"}
    w.call("reclaim", reclaim_event(NODE, res_2, body, RECLAIMER))
    w.report_terminated("vm-1")
    w.call("reclaim", reclaim_event(NODE, res_1, {"unitIds": [U5]}, BROKER))
    w.flag_stuck("vm-4")
    w.call("end_workload", end_event(NODE, "vm-2", OPERATOR))
    w.call("put_node", node_event(NODE, _node(2, "nvidia-b200"), OPERATOR))
    w.derive_reviews()  # as the relay does within seconds, before anyone re-affirms
    w.call("reaffirm", reaffirm_event(NODE, res_1, {"reason": "checked the new board"}, OPERATOR))
    w.call("update_reservation", update_event(NODE, res_1, {"contractRef": "C-7"}, OWNER))
    w.call("cancel", cancel_event(NODE, res_2, {"reason": "contract ended"}, OWNER))
    return {"res-1": res_1, "res-2": res_2}

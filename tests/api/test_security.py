"""Security properties, each checked in a way that can fail."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from devstack import api_functions, template
from devstack import fleet_documents as f
from devstack.api_events import list_units_event, reclaim_event, reclaim_plan_event
from devstack.fleet_documents import ROOT
from devstack.functions import invoke, load_function
from reservations import endpoints
from reservations.kernel.grants import TABLE

pytestmark = pytest.mark.moto


@pytest.fixture(scope="module")
def handlers():
    return {name: load_function(name) for name in ("list_units", "reclaim")}


KEYS = [
    "vl_local_test_owner",
    "vl_local_test_broker",
    "vl_local_test_stranger",
    "vl_secret_unknown_key",
]


class Lines(logging.Handler):
    """Collects what the functions' Powertools logger writes, formatted as in CloudWatch."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def app_logs(handlers) -> Any:
    service = logging.getLogger("reservations")  # POWERTOOLS_SERVICE_NAME
    collector = Lines()
    collector.setFormatter(service.handlers[0].formatter)
    service.addHandler(collector)
    yield collector.lines
    service.removeHandler(collector)


def test_no_key_hash_or_authorization_value_appears_in_any_log_line(
    handlers, load_fleet, capfd, caplog, app_logs
):
    # What an operator would turn on: INFO everywhere (botocore's DEBUG dumps request
    # bodies, keys of DynamoDB items included, and is never enabled in the functions).
    caplog.set_level(logging.INFO)
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")],
                               [f.reservation("res-1", ["0000:04:00.0"], releasedUnitIds=["0000:04:00.0"])],
                               [f.workload("vm-1", ["0000:04:00.0"])])]))  # fmt: skip
    capfd.readouterr()
    for key in KEYS:
        for header in (f"Bearer {key}", f"bearer {key} junk", key):
            invoke(handlers["list_units"], list_units_event("node-a", header))
            invoke(
                handlers["reclaim"],
                reclaim_event(
                    "node-a", "res-1", {"unitIds": ["0000:04:00.0"], "dryRun": True}, header
                ),
            )
            invoke(
                handlers["reclaim"],
                reclaim_event("node-a", "res-1", {"unitIds": ["0000:04:00.0"]}, header),
            )
            invoke(handlers["reclaim"], reclaim_event("node-a", "res-1", "{bad", header))
    captured = capfd.readouterr()
    logs = "\n".join(
        [captured.out, captured.err, *app_logs, *(r.getMessage() for r in caplog.records)]
    )
    assert any("reclaim committed" in line for line in app_logs)
    assert logs.strip(), "the requests logged nothing: this test would prove nothing"
    for key in KEYS:
        assert key not in logs
        assert hashlib.sha256(key.encode()).hexdigest() not in logs
    assert "Bearer" not in logs
    assert "bearer" not in logs


def test_no_plan_and_no_signing_secret_appears_in_any_log_line_and_a_plan_is_its_orgs(
    handlers, load_fleet, capfd, caplog, app_logs
):
    """Plans are signed with the service's secret: neither it nor a plan is logged, and a
    plan in another org's hands is that org's 404 (it may not act here) or 400 (it may, but
    the plan is not its own)."""
    caplog.set_level(logging.INFO)
    units = ["0000:04:00.0", "0000:05:00.0"]
    load_fleet(f.fleet([f.node("node-a", [f.unit(u) for u in units],
                               [f.reservation("res-1", units, releasedUnitIds=units)],
                               [f.workload("vm-1", units[:1])])]))  # fmt: skip
    capfd.readouterr()
    broker = "Bearer vl_local_test_broker"
    dry = reclaim_event("node-a", "res-1", {"count": 2, "dryRun": True}, broker)
    plan = invoke(handlers["reclaim"], dry).body["planId"]
    applied = {}
    for key in ("vl_local_test_stranger", "vl_local_test_owner", "vl_local_test_broker"):
        event = reclaim_plan_event("node-a", "res-1", plan, f"Bearer {key}")
        applied[key] = invoke(handlers["reclaim"], event).status
    by_count = reclaim_event("node-a", "res-1", {"count": 1}, broker, "sec-count")
    invoke(handlers["reclaim"], by_count)
    assert applied == {
        "vl_local_test_stranger": 404,  # may not act on res-1
        "vl_local_test_owner": 400,  # may, but the plan is the broker's org's
        "vl_local_test_broker": 200,
    }
    captured = capfd.readouterr()
    logs = "\n".join(
        [captured.out, captured.err, *app_logs, *(r.getMessage() for r in caplog.records)]
    )
    assert any("reclaim committed" in line for line in app_logs)
    assert os.environ["CURSOR_SIGNING_KEY"] not in logs
    assert plan not in logs
    assert plan.split(".")[1] not in logs  # not even its signature


def test_every_log_line_carries_the_request_id_as_correlation_id(handlers, load_fleet, app_logs):
    load_fleet(
        f.fleet(
            [f.node("node-a", [f.unit("0000:04:00.0")], [f.reservation("res-1", ["0000:04:00.0"])])]
        )
    )
    event = reclaim_event(
        "node-a", "res-1", {"unitIds": ["0000:04:00.0"]}, "Bearer vl_local_test_owner"
    )
    event["requestContext"]["requestId"] = "req-correlate-1"
    invoke(handlers["reclaim"], event)
    lines = [json.loads(line) for line in app_logs]
    assert lines, "expected Powertools log lines"
    assert all(line.get("correlation_id") == "req-correlate-1" for line in lines)


def _statements() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for logical_id, resource in template.resources().items():
        for policy in resource.get("Properties", {}).get("Policies", []) or []:
            for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
                found.append((logical_id, statement))
    return found


def test_every_iam_statement_names_its_resources():
    statements = _statements()
    assert len(statements) >= 6
    for logical_id, statement in statements:
        resources = statement["Resource"]
        resources = resources if isinstance(resources, list) else [resources]
        for resource in resources:
            text = json.dumps(resource)
            assert resource != "*", logical_id
            if "*" in text:
                # The one allowed pattern: this stack's node queues, by name prefix.
                assert resource == {
                    "Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${NodeQueuePrefix}*"
                }, (logical_id, resource)
            else:
                assert "Fn::GetAtt" in text or "Fn::Sub" in text or "Ref" in text, (
                    logical_id,
                    resource,
                )
        assert "*" not in json.dumps(statement["Action"]), logical_id


def test_the_api_is_throttled():
    settings = template.resources()["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert settings["ThrottlingRateLimit"] == {"Ref": "ApiThrottlingRateLimit"}
    assert settings["ThrottlingBurstLimit"] == {"Ref": "ApiThrottlingBurstLimit"}
    parameters = template.document()["Parameters"]
    assert parameters["ApiThrottlingRateLimit"]["Default"] > 0
    assert parameters["ApiThrottlingBurstLimit"]["Default"] > 0


def test_cfn_lint_is_clean():
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), str(ROOT / "template.yaml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_repository_holds_no_keys_but_the_local_only_demo_ones():
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    for path in tracked:
        if path.startswith("tests/") or not (ROOT / path).is_file():
            continue
        text = (ROOT / path).read_text(errors="ignore")
        for token in re.findall(r"vl_[A-Za-z0-9_]{6,}", text):
            assert token.startswith(("vl_local_only_", "vl_local_", "vl_your_key")), (path, token)


# --- least privilege inside the table -------------------------------------------------------

TABLE_ARN = {"Fn::GetAtt": ["ReservationsTable", "Arn"]}
WRITES = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
          "dynamodb:BatchWriteItem"}  # fmt: skip


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _table_statements() -> list[tuple[str, dict[str, Any]]]:
    """Every statement that allows a DynamoDB action on the table itself (not an index)."""
    return [
        (logical_id, statement)
        for logical_id, statement in _statements()
        if TABLE_ARN in _listed(statement["Resource"])
        and any(action.startswith("dynamodb:") for action in _listed(statement["Action"]))
    ]


def _leading_keys(statement: dict[str, Any]) -> list[str]:
    condition = statement.get("Condition", {}).get("ForAllValues:StringLike", {})
    return _listed(condition.get("dynamodb:LeadingKeys", []))


def _grants() -> dict[str, dict[str, set[str]]]:
    """Function -> action -> the partition-key patterns it may use that action on (``*``:
    a statement without a LeadingKeys condition reaches every item)."""
    found: dict[str, dict[str, set[str]]] = {}
    for logical_id, statement in _table_statements():
        for action in _listed(statement["Action"]):
            found.setdefault(logical_id, {}).setdefault(action, set()).update(
                _leading_keys(statement) or ["*"]
            )
    return found


def test_every_dynamodb_statement_on_the_table_is_scoped_to_key_prefixes():
    statements = _table_statements()
    assert len(statements) >= 8
    for logical_id, statement in statements:
        assert statement["Effect"] == "Allow", logical_id
        patterns = _leading_keys(statement)
        assert patterns, (logical_id, statement.get("Sid"), "no dynamodb:LeadingKeys condition")
        assert set(statement["Condition"]) == {"ForAllValues:StringLike"}, logical_id
        for pattern in patterns:
            # A prefix, or the one platform item (which org is the operator's).
            assert re.fullmatch(r"[A-Z]+#\*|PLATFORM", pattern), (logical_id, pattern)


def test_no_function_may_write_an_api_key_item():
    for logical_id, actions in _grants().items():
        for action, patterns in actions.items():
            if action in WRITES:
                assert not any(fnmatch("APIKEY#0123abcd", p) for p in patterns), (
                    logical_id,
                    action,
                )


def _declared() -> dict[str, dict[str, set[str]]]:
    """Each endpoint's function -> action -> the key patterns its declared policy grants on
    the table (its declaration is where they are reviewed; the template is made from it)."""
    found: dict[str, dict[str, set[str]]] = {}
    for route in endpoints.ALL:
        for grant in route.policy:
            if grant.on != TABLE:
                continue
            actions = found.setdefault(api_functions.logical_name(route) + "Function", {})
            for action in grant.actions:
                actions.setdefault(action, set()).update(grant.keys or ["*"])
    return found


def test_an_endpoint_reads_only_what_it_answers_from_and_a_read_writes_nothing():
    declared = _declared()
    for route in endpoints.ALL:
        actions = declared[api_functions.logical_name(route) + "Function"]
        assert actions["dynamodb:GetItem"] >= {"APIKEY#*"}  # the caller's key
        if route.method == "GET":
            assert not set(actions) & WRITES, route.function
        if route.spec is not None and route.spec.keyed:
            assert "IDEMPOTENCY#*" in actions["dynamodb:PutItem"], route.function


def test_each_function_may_touch_only_the_key_prefixes_it_needs():
    """The endpoints' functions as their declarations grant (above); every other as here."""
    node, hist = "NODE#*", "NODEHIST#*"
    hooks = "ORGHOOK#*"
    assert _grants() == {
        **_declared(),
        # The fleet index from the stream: it writes the index alone; it reads a node's
        # owner and, when the owner changed, the node's reservations and history.
        "FleetIndexerFunction": {
            "dynamodb:PutItem": {"FLEET#*"},
            "dynamodb:DeleteItem": {"FLEET#*"},
            "dynamodb:GetItem": {node, hist},
            "dynamodb:Query": {node, hist},
        },
        "TerminationReportsFunction": {
            "dynamodb:Query": {node},
            "dynamodb:DeleteItem": {node},
            "dynamodb:UpdateItem": {node},
            "dynamodb:PutItem": {"WLHIST#*", "NODEEVT#*"},  # a close writes its event
        },
        "SweeperFunction": {
            "dynamodb:Query": {node},
            "dynamodb:GetItem": {node},
            "dynamodb:UpdateItem": {node},
            "dynamodb:PutItem": {"NODEEVT#*"},  # a stuck flag writes its event
        },
        # Moves expired reservations out of node partitions into their history, nothing else.
        # Moves an expired reservation with its clock events: reads it and its node again.
        "HistoryMoverFunction": {
            "dynamodb:BatchGetItem": {node, hist},
            "dynamodb:DeleteItem": {node},
            "dynamodb:PutItem": {hist, "NODEEVT#*"},
        },
        # The clock: a due reservation and its node read, the moment recorded on it (never
        # its version), or its move into history, with the event.
        # Then the lending pass: what is due read, each due reservation's node partition
        # read (one Query), the units lent with their event.
        "ClockFunction": {
            "dynamodb:Query": {node},
            "dynamodb:BatchGetItem": {node, hist},
            "dynamodb:UpdateItem": {node},
            "dynamodb:DeleteItem": {node},
            "dynamodb:ConditionCheckItem": {node},
            "dynamodb:PutItem": {hist, "NODEEVT#*"},
        },
        # Reads what it sends and records it: subscriptions and their deliveries only.
        "WebhookSenderFunction": {
            "dynamodb:GetItem": {"ORGHOOK#*", "WHDELIV#*"},
            "dynamodb:UpdateItem": {"ORGHOOK#*", "WHDELIV#*"},
            "dynamodb:PutItem": {"WHDELIV#*"},
        },
        # The relays write the org feeds, settle the node feeds' marks and put the events
        # derived from one (a node update's reviews) in its node feed, queue webhook
        # deliveries (the subscriptions read, each delivery's record put before its message;
        # the operator's org read from the platform item), and keep each node's usage
        # checkpoint (its latest one and its loads read, one put; its events by time from the
        # index, below).
        "EventRelayFunction": {
            "dynamodb:BatchWriteItem": {"ORGEVT#*"},
            "dynamodb:UpdateItem": {"NODEEVT#*"},
            "dynamodb:Query": {hooks, node, "USAGE#*"},
            "dynamodb:GetItem": {"PLATFORM", "NODEEVT#*"},
            "dynamodb:BatchGetItem": {"NODEEVT#*"},
            "dynamodb:PutItem": {"NODEEVT#*", "WHDELIV#*", "USAGE#*"},
        },
        "EventBacklogFunction": {
            "dynamodb:BatchWriteItem": {"ORGEVT#*"},
            "dynamodb:UpdateItem": {"NODEEVT#*"},
            "dynamodb:Query": {hooks, node, "USAGE#*"},
            "dynamodb:GetItem": {"PLATFORM", "NODEEVT#*"},
            "dynamodb:BatchGetItem": {"NODEEVT#*"},
            "dynamodb:PutItem": {"NODEEVT#*", "WHDELIV#*", "USAGE#*"},
        },
    }


def test_only_the_node_function_makes_queues_and_only_this_stacks_node_queues():
    node_queues = {
        "Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${NodeQueuePrefix}*"
    }
    makers = [
        (logical_id, statement)
        for logical_id, statement in _statements()
        if "sqs:CreateQueue" in _listed(statement["Action"])
    ]
    assert [logical_id for logical_id, _ in makers] == ["PutNodeFunction"]
    [(_, statement)] = makers
    assert _listed(statement["Resource"]) == [node_queues]
    assert sorted(_listed(statement["Action"])) == ["sqs:CreateQueue", "sqs:GetQueueAttributes"]


def test_the_sweeper_alone_reads_the_open_terminations_index():
    index = {"Fn::Sub": "${ReservationsTable.Arn}/index/OpenTerminations"}
    on_index = [(i, s) for i, s in _statements() if index in _listed(s["Resource"])]
    assert [(i, _listed(s["Action"])) for i, s in on_index] == [
        ("SweeperFunction", ["dynamodb:Query"])
    ]


def test_the_history_mover_alone_reads_the_live_reservation_ends_index():
    index = {"Fn::Sub": "${ReservationsTable.Arn}/index/LiveReservationEnds"}
    on_index = [(i, s) for i, s in _statements() if index in _listed(s["Resource"])]
    assert [(i, _listed(s["Action"])) for i, s in on_index] == [
        ("HistoryMoverFunction", ["dynamodb:Query"])
    ]


def test_the_reservation_list_alone_reads_the_node_reservations_index_by_node():
    """Usage reads only the reservations that governed in its periods, by id: not the
    index of every reservation a node keeps."""
    index = {"Fn::Sub": "${ReservationsTable.Arn}/index/NodeReservations"}
    on_index = [(i, s) for i, s in _statements() if index in _listed(s["Resource"])]
    assert sorted((i, _listed(s["Action"])) for i, s in on_index) == [
        ("ListReservationsFunction", ["dynamodb:Query"]),
    ]
    for _, statement in on_index:
        assert statement["Condition"] == {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["NODE#*"]}
        }


def test_usage_and_the_relays_alone_read_the_events_by_time_index_and_only_node_feeds():
    """Usage reads a node's events by time; the relays, to make its checkpoints."""
    index = {"Fn::Sub": "${ReservationsTable.Arn}/index/EventsByTime"}
    on_index = [(i, s) for i, s in _statements() if index in _listed(s["Resource"])]
    assert sorted((i, _listed(s["Action"])) for i, s in on_index) == [
        ("EventBacklogFunction", ["dynamodb:Query"]),
        ("EventRelayFunction", ["dynamodb:Query"]),
        ("ListUsageFunction", ["dynamodb:Query"]),
    ]
    for _, statement in on_index:
        assert statement["Condition"] == {
            "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["NODEEVT#*"]}
        }


def test_the_backlog_relay_alone_reads_the_unrelayed_events_index():
    index = {"Fn::Sub": "${ReservationsTable.Arn}/index/UnrelayedEvents"}
    on_index = [(i, s) for i, s in _statements() if index in _listed(s["Resource"])]
    assert [(i, _listed(s["Action"])) for i, s in on_index] == [
        ("EventBacklogFunction", ["dynamodb:Query"])
    ]


def test_only_the_relays_read_the_stream_and_put_on_the_bus_and_only_this_stacks():
    stream = {"Fn::GetAtt": ["ReservationsTable", "StreamArn"]}
    bus = {"Fn::GetAtt": ["EventBus", "Arn"]}
    readers = {i for i, s in _statements() if stream in _listed(s["Resource"])}
    putters = [
        (i, _listed(s["Resource"]))
        for i, s in _statements()
        if "events:PutEvents" in _listed(s["Action"])
    ]
    assert readers == {"EventRelayFunction", "FleetIndexerFunction"}
    assert putters == [("EventRelayFunction", [bus]), ("EventBacklogFunction", [bus])]
    # The relay is handed only new event items (never an API key's or a node's).
    mapping = template.stream_mappings()["EventRelayStream"]
    [pattern] = [json.loads(f["Pattern"]) for f in mapping["FilterCriteria"]["Filters"]]
    assert pattern == {
        "eventName": ["INSERT"],
        "dynamodb": {"Keys": {"PK": {"S": [{"prefix": "NODEEVT#"}]}}},
    }
    # The fleet indexer only reservations' and nodes' items (never an API key's or an
    # event's), and writes only the fleet index.
    indexer = template.stream_mappings()["FleetIndexerStream"]
    [pattern] = [json.loads(f["Pattern"]) for f in indexer["FilterCriteria"]["Filters"]]
    assert pattern == {"dynamodb": {"Keys": {"SK": {"S": [{"prefix": "RES#"}, "#NODE"]}}}}
    writes = [s for i, s in _statements() if i == "FleetIndexerFunction"
              and {"dynamodb:PutItem", "dynamodb:DeleteItem"} & set(_listed(s["Action"]))]  # fmt: skip
    assert [w["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] for w in writes] == [
        ["FLEET#*"]
    ]


def test_the_not_found_function_is_the_default_route_and_has_no_aws_permissions():
    function = template.resources()["NotFoundFunction"]["Properties"]
    assert not function.get("Policies")
    assert "Role" not in function
    assert not [s for i, s in _statements() if i == "NotFoundFunction"]
    routes = [e["Properties"] for e in function["Events"].values() if e["Type"] == "HttpApi"]
    assert routes == [{"ApiId": {"Ref": "HttpApi"}, "Method": "ANY", "Path": "$default"}]
    log_group = function["LoggingConfig"]["LogGroup"]
    assert template.resources()[log_group["Ref"]]["Type"] == "AWS::Logs::LogGroup"


def test_the_webhook_sender_touches_its_delivery_queue_only():
    sender = [s for i, s in _statements() if i == "WebhookSenderFunction"]
    on_queues = [s for s in sender if any(a.startswith("sqs:") for a in _listed(s["Action"]))]
    assert [(s["Action"], s["Resource"]) for s in on_queues] == [
        ("sqs:ChangeMessageVisibility", {"Fn::GetAtt": ["WebhookDeliveryQueue", "Arn"]})
    ]
    function = template.resources()["WebhookSenderFunction"]["Properties"]
    (source,) = function["Events"].values()
    assert source["Type"] == "SQS"
    assert source["Properties"]["Queue"] == {"Fn::GetAtt": ["WebhookDeliveryQueue", "Arn"]}
    assert source["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_the_webhook_delivery_queue_redrives_to_an_alarmed_dead_letter_queue():
    resources = template.resources()
    queue = resources["WebhookDeliveryQueue"]["Properties"]
    dead_letters = queue["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
    alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
    watched = [
        a for a in alarms
        if a["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dead_letters, "QueueName"]}}]
    ]  # fmt: skip
    assert len(watched) == 1
    assert watched[0]["MetricName"] == "ApproximateNumberOfMessagesVisible"
    # The queue's visibility outlasts the function (Lambda requires it), 6 times over.
    timeout = resources["WebhookSenderFunction"]["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] >= 6 * timeout


def test_the_local_receiver_allowance_is_off_unless_a_stack_turns_it_on():
    parameter = template.document()["Parameters"]["WebhookAllowLocalReceiver"]
    assert parameter["Default"] == "false"
    assert parameter["AllowedValues"] == ["false", "true"]
    function = template.resources()["WebhookSenderFunction"]["Properties"]
    variables = function["Environment"]["Variables"]
    assert variables["WEBHOOK_ALLOW_LOCAL_RECEIVER"] == {"Ref": "WebhookAllowLocalReceiver"}


def test_the_clock_alone_reads_the_clock_moments_index():
    index = {"Fn::Sub": "${ReservationsTable.Arn}/index/ClockMoments"}
    on_index = [(i, s) for i, s in _statements() if index in _listed(s["Resource"])]
    assert [(i, _listed(s["Action"])) for i, s in on_index] == [
        ("ClockFunction", ["dynamodb:Query"])
    ]


def test_the_clock_alone_reads_the_lending_moments_index():
    index = {"Fn::Sub": "${ReservationsTable.Arn}/index/LendingMoments"}
    on_index = [(i, s) for i, s in _statements() if index in _listed(s["Resource"])]
    assert [(i, _listed(s["Action"])) for i, s in on_index] == [
        ("ClockFunction", ["dynamodb:Query"])
    ]

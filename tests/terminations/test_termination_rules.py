"""The sweeper's pure rules, the message wire form and the node queue names."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from devstack import template
from reservations.nodes.models.partition import (
    Termination,
    Tier,
    Workload,
    WorkloadKind,
    WorkloadState,
)
from reservations.nodes.table.queue import MAX_QUEUE_PREFIX, node_queue_name
from reservations.terminations.ids import MAX_TERMINATION_ID
from reservations.terminations.models import SpotTermination, TerminationReport
from reservations.terminations.rules.delivery import (
    RedeliveryPolicy,
    deduplication_id,
    gives_up,
    is_due,
    unreported_deliveries,
)
from reservations_tools.terminations import age

pytestmark = pytest.mark.disable_socket

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
POLICY = RedeliveryPolicy(
    grace=timedelta(seconds=60),
    confirm_deadline=timedelta(seconds=600),
    stuck_resend=timedelta(seconds=3600),
    max_deliveries=5,
)


def terminating(
    deliveries: int = 0,
    last: datetime | None = None,
    stuck: datetime | None = None,
    reported: int | None = None,
) -> Workload:
    return Workload(
        id="vm-1",
        kind=WorkloadKind.VM,
        tier=Tier.SPOT,
        org_id="org-spot",
        unit_ids=("0000:04:00.0",),
        state=WorkloadState.TERMINATING,
        termination=Termination(
            id="t-1",
            requested_at=T0,
            deliveries=deliveries,
            last_delivered_at=last,
            stuck_at=stuck,
            reported_deliveries=reported or 0,
            last_reported_at=None if reported is None else at(1),
            failed_reports=0 if reported is None else 1,
        ),
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("workload", "now", "due"),
    [
        # Never delivered by the sweeper: the reclaim's own send gets the grace period.
        (terminating(), at(59), False),
        (terminating(), at(60), True),
        (terminating(), at(86400 * 3), True),
        # Delivered: the node has the confirm deadline to report, counted from the last send.
        (terminating(1, at(60)), at(659), False),
        (terminating(1, at(60)), at(660), True),
        (terminating(4, at(3000)), at(3599), False),
        # Stuck: the slow pace, still counted from the last accepted send.
        (terminating(5, at(3000), stuck=at(3600)), at(3000 + 3599), False),
        (terminating(5, at(3000), stuck=at(3600)), at(3000 + 3600), True),
    ],
)
def test_a_termination_is_due_by_its_deliveries_not_by_attempts(workload, now, due):
    assert is_due(workload, POLICY, now) is due


def test_only_accepted_deliveries_lead_to_giving_up_and_only_once():
    assert not gives_up(terminating(4, at(60)), POLICY)
    assert gives_up(terminating(5, at(60)), POLICY)
    assert not gives_up(terminating(9, at(60), stuck=at(70)), POLICY)  # already flagged


@pytest.mark.parametrize(
    ("workload", "flagged"),
    [
        # A failed report answers the deliveries before it: only the silence after counts.
        (terminating(5, at(60), reported=5), False),
        (terminating(9, at(60), reported=5), False),
        (terminating(10, at(60), reported=5), True),
        (terminating(12, at(60), reported=5), True),
        # A report before any sweeper send counts from zero, as no report at all does.
        (terminating(4, at(60), reported=0), False),
        (terminating(5, at(60), reported=0), True),
        # Flagged once only, report or not.
        (terminating(12, at(60), stuck=at(70), reported=5), False),
    ],
)
def test_giving_up_counts_only_the_deliveries_since_the_last_report(workload, flagged):
    assert gives_up(workload, POLICY) is flagged


def test_a_report_counted_past_the_deliveries_never_makes_a_negative_count():
    assert unreported_deliveries(terminating(2, at(60), reported=3)) == 0
    assert unreported_deliveries(terminating(7, at(60), reported=3)) == 4
    assert unreported_deliveries(terminating(7, at(60))) == 7


def test_the_first_sweeper_send_reuses_the_termination_id_later_ones_do_not():
    assert deduplication_id("t-1", 0) == "t-1"  # SQS drops it if the reclaim's send made it
    assert deduplication_id("t-1", 1) == "t-1#r1"
    assert deduplication_id("t-1", 7) == "t-1#r7"


def test_deduplication_ids_never_exceed_sqs_128_characters():
    longest = "t" * MAX_TERMINATION_ID
    assert deduplication_id(longest, 10**20) == f"{longest}#r{10**20}"
    assert len(deduplication_id(longest, 10**20)) <= 128
    too_long = "x" * 300  # a stored id that somehow escaped the id rule
    ids = {deduplication_id(too_long, n) for n in range(4)}
    assert len(ids) == 4  # still one per delivery
    assert all(len(i) <= 128 for i in ids)


def test_node_queue_names_fit_80_characters_for_the_longest_prefix_and_node_id():
    prefix = "p" * MAX_QUEUE_PREFIX
    names = {node_queue_name(prefix, f"{'n' * 127}{c}") for c in "ab"}
    names.add(node_queue_name(prefix, "node:with.dots" + "x" * 114))
    assert len(names) == 3
    for name in names:
        assert len(name) <= 80
        assert name.startswith(prefix)
        assert name.endswith(".fifo")
    assert node_queue_name("reservations-node-", "node-a1") == "reservations-node-node-a1.fifo"
    for prefix in ("p" * (MAX_QUEUE_PREFIX + 1), "", "stack node-", "stack.node-"):
        with pytest.raises(ValueError, match="prefix"):
            node_queue_name(prefix, "node-a1")  # what the template's pattern refuses


def test_a_node_id_sqs_cannot_take_whole_is_cut_or_dashed_and_suffixed_with_its_hash():
    prefix = "p" * MAX_QUEUE_PREFIX  # leaves 35 characters for the node's part
    fits = "n" * 35
    assert node_queue_name(prefix, fits) == f"{prefix}{fits}.fifo"  # 80 exactly, as is
    longer = "n" * 36
    digest = hashlib.sha256(longer.encode()).hexdigest()[:12]
    assert node_queue_name(prefix, longer) == f"{prefix}{'n' * 22}-{digest}.fifo"
    digest = hashlib.sha256(b"node:a").hexdigest()[:12]
    assert node_queue_name("p", "node:a") == f"pnode-a-{digest}.fifo"  # a 1-character prefix


def test_the_stack_names_node_queues_by_a_bounded_prefix_not_by_its_own_name():
    parameter = template.document()["Parameters"]["NodeQueuePrefix"]
    assert parameter["MaxLength"] == MAX_QUEUE_PREFIX
    assert parameter["AllowedPattern"] == "^[A-Za-z0-9_-]{1,40}$"
    assert parameter["Default"] == "reservations-node-"
    send_lines = [
        statement["Resource"]
        for resource in template.resources().values()
        for policy in resource.get("Properties", {}).get("Policies", []) or []
        for statement in policy.get("Statement", [])
        if statement["Action"] == "sqs:SendMessage"
        # The relays and a retry by hand send to the webhook delivery queue, nothing else.
        and statement["Resource"] != {"Fn::GetAtt": ["WebhookDeliveryQueue", "Arn"]}
    ]
    # The reclaim, the sweeper and a placement that takes lent units back.
    assert len(send_lines) == 3
    for line in send_lines:
        assert line == {
            "Fn::Sub": "arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${NodeQueuePrefix}*"
        }
    assert template.document()["Outputs"]["NodeQueuePrefix"]["Value"] == {"Ref": "NodeQueuePrefix"}


def test_the_sweeper_gets_its_slow_pace_from_the_stack():
    variables = template.resources()["SweeperFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["STUCK_RESEND_SECONDS"] == {"Ref": "StuckResendSeconds"}
    assert template.document()["Parameters"]["StuckResendSeconds"]["Default"] == 3600


def test_a_termination_without_a_reason_has_no_reason_field_at_all():
    message = SpotTermination(
        termination_id="t-1",
        node_id="node-a",
        workload_id="vm-1",
        workload_kind=WorkloadKind.VM,
        unit_ids=["0000:04:00.0"],
        reservation_id="res-1",
        requested_at=T0,
    )
    assert message.to_json() == (
        '{"version":1,"type":"spot-termination","terminationId":"t-1","nodeId":"node-a",'
        '"workloadId":"vm-1","workloadKind":"vm","unitIds":["0000:04:00.0"],'
        '"reservationId":"res-1","requestedAt":"2026-11-29T12:00:00Z"}'
    )
    with_reason = message.model_copy(update={"reason": "lab"})
    assert json.loads(with_reason.to_json())["reason"] == "lab"


def test_a_report_without_detail_has_no_detail_field_at_all():
    report = TerminationReport(
        termination_id="t-1", node_id="node-a", workload_id="vm-1", outcome="gone", reported_at=T0
    )
    assert report.to_json() == (
        '{"version":1,"type":"termination-report","terminationId":"t-1","nodeId":"node-a",'
        '"workloadId":"vm-1","outcome":"gone","reportedAt":"2026-11-29T12:00:00Z"}'
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0s"),
        (42, "42s"),
        (17 * 60 + 5, "17m"),
        (3 * 3600 + 5 * 60, "3h05m"),
        (2 * 86400 + 4 * 3600, "2d04h"),
        (-5, "0s"),
    ],
)
def test_the_operator_command_shows_ages_briefly(seconds, shown):
    assert age(timedelta(seconds=seconds)) == shown


@pytest.mark.parametrize("termination_id", ["t \u00e9", "t\n1", "t 1"])
@pytest.mark.parametrize("deliveries", [0, 1])
def test_a_malformed_termination_id_still_gives_a_deduplication_id_sqs_accepts(
    termination_id, deliveries
):
    # SQS: up to 128 of alphanumerics and punctuation.
    dedup = deduplication_id(termination_id, deliveries)
    assert re.fullmatch(r"[A-Za-z0-9!-/:-@\[-`{-~]{1,128}", dedup), dedup
    assert dedup != deduplication_id(termination_id, deliveries + 1)


def test_a_deduplication_id_of_exactly_128_characters_is_sent_as_it_is():
    longest = "t" * MAX_TERMINATION_ID
    exactly = f"{longest}#r{10**25}"
    assert len(exactly) == 128
    assert deduplication_id(longest, 10**25) == exactly


def test_a_longer_one_is_sent_as_the_sha256_of_it():
    longest = "t" * MAX_TERMINATION_ID
    over = f"{longest}#r{10**26}"
    assert (
        deduplication_id(longest, 10**26) == "sha256-" + hashlib.sha256(over.encode()).hexdigest()
    )
    assert deduplication_id("t 1", 0) == "sha256-" + hashlib.sha256(b"t 1").hexdigest()

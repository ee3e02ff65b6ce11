"""Terminations: a report's close as TransactWriteItems, and the table behind the logic's
terminations store (the sparse index of open ones, consistent re-reads, the sweeper's
delivery record and a failed report's, each on the workload item)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from reservations.kernel.aws import clients
from reservations.kernel.aws.actions import Action, overwrite, table
from reservations.kernel.aws.codec import Item, from_attributes, to_attributes
from reservations.kernel.aws.event_items import event_put, rewrite_late
from reservations.kernel.envelope import StoredEvent
from reservations.kernel.settings import settings
from reservations.kernel.times import format_event_time, format_time
from reservations.kernel.writes import ItemVersion
from reservations.nodes import (
    OPEN_TERMINATION,
    TerminationState,
    Workload,
    WorkloadState,
    Writer,
    node_events_pk,
    node_id_of,
    node_key,
    unit_key,
    workload_from_item,
    workload_history_item,
    workload_item,
    workload_key,
)
from reservations.terminations.models import OpenTermination, TerminationReport
from reservations.terminations.writes import HandOver, TerminationClose

_OPEN = TerminationState.OPEN.value
_STILL_OPEN = f"terminationId = :tid AND attribute_exists({OPEN_TERMINATION})"


# A waiting workload's list of what it waits on, and when a workload's use began, as
# ``nodes``' workload item stores them; when a unit was last freed, and the waiting workload
# it is held for, as its unit item does.
_WAITING_FOR = "waitingFor"
_USED_FROM = "usedFrom"
_FREED_AT = "freedAt"
_HELD_FOR = "heldFor"

# The sparse index of open terminations (its partition key: ``nodes``' ``OPEN_TERMINATION``).
OPEN_TERMINATIONS_INDEX = "OpenTerminations"


def close_actions(closing: TerminationClose) -> list[Action]:
    """The workload leaves the node partition for its history item and frees the units it
    still holds; on the workload still under this termination, at the version read."""
    node_id = closing.node_id
    values = {":v": closing.workload.version, ":tid": closing.termination_id}
    return [
        {
            "Delete": {
                "TableName": table(),
                "Key": to_attributes(workload_key(node_id, closing.workload.id)),
                "ConditionExpression": "version = :v AND terminationId = :tid",
                "ExpressionAttributeValues": to_attributes(values),
            }
        },
        overwrite(history_item(closing)),
        *let_go_actions(node_id, closing.freed_units, closing.handed, closing.waiters, closing.at),
    ]


def let_go_actions(
    node_id: str,
    freed: tuple[ItemVersion, ...],
    handed: tuple[HandOver, ...],
    waiters: tuple[Workload, ...],
    at: datetime,
) -> list[Action]:
    """A workload's end on its units and its waiters (``rules.delivery.let_go``): units
    freed, units handed over to the workload held for, each waiter rewritten at its version
    read (what it still waits on; running when nothing); a report and the scheduler's end
    both write it."""
    return [
        *(_free_unit(node_id, unit, at) for unit in freed),
        *(_hand_over(node_id, hand_over) for hand_over in handed),
        *(_waiter_update(node_id, waiter, at) for waiter in waiters),
    ]


def _free_unit(node_id: str, unit: ItemVersion, at: datetime) -> Action:
    """A unit its workload no longer holds: unclaimed, freed ``at`` (a lending policy counts
    its idle time from then), at the version read; a hold left for a workload that is gone
    goes with the claim."""
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(unit_key(node_id, unit.id)),
            "UpdateExpression": f"REMOVE claimedBy, {_HELD_FOR} "
            f"SET {_FREED_AT} = :at, version = version + :one",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes(
                {":v": unit.version, ":one": 1, ":at": format_event_time(at)}
            ),
        }
    }


def _waiter_update(node_id: str, waiter: Workload, at: datetime) -> Action:
    """A waiting workload at its version read: what it still waits on, or running (its
    list gone) when nothing, its use starting with this write's commit."""
    values = {":state": waiter.state.value, ":v": waiter.version, ":one": 1}
    update = "SET #state = :state, version = version + :one"
    stored = workload_item(node_id, replace(waiter, used_from=at))
    if stored.get(_WAITING_FOR):
        update += f", {_WAITING_FOR} = :waiting"
        values[":waiting"] = stored[_WAITING_FOR]
    else:
        update += f", {_USED_FROM} = :from REMOVE {_WAITING_FOR}"
        values[":from"] = stored[_USED_FROM]
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(workload_key(node_id, waiter.id)),
            "UpdateExpression": update,
            "ConditionExpression": "version = :v",
            "ExpressionAttributeNames": {"#state": "state"},
            "ExpressionAttributeValues": to_attributes(values),
        }
    }


def _hand_over(node_id: str, hand_over: HandOver) -> Action:
    """The waiting workload claims the unit held for it, at the version read."""
    unit = hand_over.unit
    return {
        "Update": {
            "TableName": table(),
            "Key": to_attributes(unit_key(node_id, unit.id)),
            "UpdateExpression": "SET claimedBy = :claim, version = version + :one "
            f"REMOVE {_HELD_FOR}",
            "ConditionExpression": "version = :v",
            "ExpressionAttributeValues": to_attributes(
                {":claim": hand_over.claim, ":v": unit.version, ":one": 1}
            ),
        }
    }


# The deliveries so far are copied inside the write, not from a read: a delivery the sweeper
# records at the same moment cannot slip in between and be taken for an unanswered one.
_FAILED_REPORT = (
    "SET terminationReportedDeliveries = if_not_exists(deliveries, :zero), "
    "terminationLastReportedAt = :now, "
    "terminationFailedReports = if_not_exists(terminationFailedReports, :zero) + :one, "
    f"{OPEN_TERMINATION} = :open "
    "REMOVE stuckAt"
)


class TerminationTable:
    """The open terminations, as the sweeper, the reports and the operator's command read
    and record them; clients are made on first use (or given, for the command)."""

    def __init__(self, dynamodb: Any = None, table_name: str | None = None) -> None:
        self._client = dynamodb
        self._table = table_name

    @property
    def client(self) -> Any:
        return self._client or clients.dynamodb()

    @property
    def table(self) -> str:
        return self._table or settings().table_name

    def listed(self, state: TerminationState) -> Iterator[OpenTermination]:
        """One partition of the index ("open" or "stuck"): never a table scan."""
        paginator = self.client.get_paginator("query")
        for page in paginator.paginate(
            TableName=self.table,
            IndexName=OPEN_TERMINATIONS_INDEX,
            KeyConditionExpression=f"{OPEN_TERMINATION} = :partition",
            ExpressionAttributeValues={":partition": {"S": state.value}},
        ):
            for attributes in page["Items"]:
                yield _open_termination(from_attributes(attributes))

    def read(self, node_id: str, workload_id: str) -> OpenTermination | None:
        """The termination as it is now (the index lags); None when it is no longer open."""
        response = self.client.get_item(
            TableName=self.table,
            Key=to_attributes(workload_key(node_id, workload_id)),
            ConsistentRead=True,
        )
        if "Item" not in response:
            return None
        termination = _open_termination(from_attributes(response["Item"]))
        if termination.workload.state is not WorkloadState.TERMINATING:
            return None
        return termination

    def node_queue_url(self, node_id: str) -> str | None:
        response = self.client.get_item(
            TableName=self.table,
            Key=to_attributes(node_key(node_id)),
            ProjectionExpression="queueUrl",
        )
        url = response.get("Item", {}).get("queueUrl", {}).get("S")
        return str(url) if url else None

    def record_delivery(self, termination: OpenTermination, now: datetime) -> None:
        """One more send that SQS accepted; of the deadline it carried: a send of a deadline
        a reclaim moved meanwhile is not a delivery of the new one."""
        changes = termination.termination.deadline_changes
        values: dict[str, Any] = {":zero": 0, ":one": 1, ":now": format_time(now)}
        same_deadline = " AND attribute_not_exists(terminationDeadlineChanges)"
        if changes:
            values[":changes"] = changes
            same_deadline = " AND terminationDeadlineChanges = :changes"
        self._update(
            termination,
            "SET deliveries = if_not_exists(deliveries, :zero) + :one, lastDeliveredAt = :now",
            values,
            same_deadline,
        )

    def node_owner(self, node_id: str) -> str | None:
        """The node's owner (one GetItem): a stuck termination's event is the owner's."""
        response = self.client.get_item(
            TableName=self.table,
            Key=to_attributes(node_key(node_id)),
            ProjectionExpression="ownerOrgId",
        )
        owner = response.get("Item", {}).get("ownerOrgId", {}).get("S")
        return str(owner) if owner else None

    def mark_stuck(self, termination: OpenTermination, now: datetime, stuck: StoredEvent) -> bool:
        """Move it to the index's "stuck" partition, with its event, in one transaction;
        False if it was not open any more, or if the node reported since it was read (it
        answered: not stuck)."""
        values: dict[str, Any] = {
            ":stuck": TerminationState.STUCK.value,
            ":now": format_time(now),
            ":open": _OPEN,
        }
        reports = termination.termination.failed_reports
        if reports:
            values[":reports"] = reports
            unanswered = "terminationFailedReports = :reports"
        else:
            unanswered = "attribute_not_exists(terminationFailedReports)"
        update = self._update_request(
            termination,
            f"SET {OPEN_TERMINATION} = :stuck, stuckAt = :now",
            values,
            f" AND {OPEN_TERMINATION} = :open AND {unanswered}",
        )
        event = event_put(
            stuck, node_events_pk(termination.node_id), settings().history_retention_days
        )
        event["Put"]["TableName"] = self.table
        actions = [{"Update": update}, event]
        try:
            self.client.transact_write_items(TransactItems=actions)
        except ClientError as error:
            # Closed, flagged or answered meanwhile: nothing written.
            if error.response["Error"]["Code"] == "TransactionCanceledException":
                return False
            raise
        rewrite_late([event])
        return True

    def record_failed_report(self, report: TerminationReport, at: datetime) -> Workload | None:
        """Note on the terminating workload that its node answered ``failed``, and reopen it
        if it was flagged stuck; the workload as it was before. Conditioned on the
        termination id and on the item being in the index, like a close: a late report for
        a termination closed meanwhile (its item gone, or another termination's) writes
        nothing and gives None. ``version`` is left alone: like the sweeper's record, this
        is bookkeeping that no decision on the node partition reads."""
        values = {":tid": report.termination_id, ":now": format_time(at), ":open": _OPEN}
        try:
            response = self.client.update_item(
                TableName=self.table,
                Key=to_attributes(workload_key(report.node_id, report.workload_id)),
                UpdateExpression=_FAILED_REPORT,
                ConditionExpression=_STILL_OPEN,
                ExpressionAttributeValues=to_attributes({**values, ":zero": 0, ":one": 1}),
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise
        return workload_from_item(from_attributes(response["Attributes"]))

    def _update_request(
        self, termination: OpenTermination, update: str, values: dict[str, Any], extra: str = ""
    ) -> dict[str, Any]:
        """An update of the workload while it is under this termination (and ``extra``)."""
        key = workload_key(termination.node_id, termination.workload.id)
        return {
            "TableName": self.table,
            "Key": to_attributes(key),
            "UpdateExpression": update,
            "ConditionExpression": "terminationId = :tid" + extra,
            "ExpressionAttributeValues": to_attributes(
                {**values, ":tid": termination.termination_id}
            ),
        }

    def _update(
        self, termination: OpenTermination, update: str, values: dict[str, Any], extra: str = ""
    ) -> bool:
        try:
            self.client.update_item(**self._update_request(termination, update, values, extra))
        except ClientError as error:
            # A report closed it meanwhile: then there is nothing left to record.
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True


def _open_termination(item: dict[str, Any]) -> OpenTermination:
    return OpenTermination(node_id=node_id_of(item["PK"]), workload=workload_from_item(item))


def history_item(closing: TerminationClose) -> Item:
    """A closed termination's workload, out of the hot partition, with its own use, kept
    ``HistoryRetentionDays``."""
    return {
        **workload_history_item(
            closing.node_id, closing.workload, closing.at, closing.termination_id, closing.gpus
        ),
        "terminationId": closing.termination_id,
        "outcome": closing.outcome,
        "terminatedAt": format_time(closing.at),
    }


# How a close is committed: no token, as a report retries it with other versions.
WRITERS = (Writer.sized(TerminationClose, close_actions, token=None),)

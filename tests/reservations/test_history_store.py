"""Pruning the orgs a node's list access names no more, the DAL called directly over moto:
how many it takes out, the version it counts on, an org named until exactly now, a
re-naming that races the prune, and any other refusal of its update."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from reservations.kernel.aws import clients, queries
from reservations.kernel.aws.codec import to_attributes
from reservations.nodes.models.partition import ListAccess
from reservations.nodes.table import access as access_table
from reservations.nodes.table.access import prune_named
from reservations.nodes.table.items import access_item
from tests.support import state

pytestmark = [pytest.mark.moto, pytest.mark.disable_socket]

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TABLE = "ReservationsTable"


def put(aws: Any, item: dict[str, Any]) -> None:
    aws.put_item(TableName=TABLE, Item=to_attributes(item))


def named(aws: Any, **until: datetime) -> None:
    put(aws, access_item("node-a", ListAccess("org-acme", named_until=until)))


def access(aws: Any) -> dict[str, Any]:
    found = state.item(aws, "node-a", "~ACCESS")
    assert found is not None
    return found


def names(item: dict[str, Any]) -> dict[str, int]:
    return {k: int(v) for k, v in item.items() if k.startswith("namedUntil:")}


def test_nothing_past_is_no_write_and_none_taken_out(aws: Any) -> None:
    named(aws, **{"org-a": NOW + timedelta(seconds=1)})
    assert prune_named("node-a", NOW) == 0
    assert "version" not in access(aws)
    assert prune_named("node-unknown", NOW) == 0


def test_every_org_named_until_now_or_before_is_taken_out_in_one_update(aws: Any) -> None:
    later = NOW + timedelta(days=1)
    named(aws, **{"org-a": NOW, "org-b": NOW - timedelta(days=3), "org-c": later})
    assert prune_named("node-a", NOW) == 2
    item = access(aws)
    assert names(item) == {"namedUntil:org-c": int(later.timestamp())}
    assert item["version"] == 1
    assert item["ownerOrgId"] == "org-acme"


def test_each_prune_counts_the_version_on_by_one(aws: Any) -> None:
    named(aws, **{"org-a": NOW - timedelta(days=2), "org-b": NOW - timedelta(days=1)})
    assert prune_named("node-a", NOW - timedelta(days=2)) == 1
    assert access(aws)["version"] == 1
    assert prune_named("node-a", NOW) == 1
    item = access(aws)
    assert item["version"] == 2
    assert names(item) == {}


def renamed_between(aws: Any, org: str, until: datetime) -> Callable[[Any], Any]:
    """The prune's read of the access item, with ``org`` named again right after it."""
    read = queries.get_item

    def racing(key: Any) -> Any:
        item = read(key)
        aws.update_item(
            TableName=TABLE,
            Key=to_attributes(key),
            UpdateExpression="SET #n = :u",
            ExpressionAttributeNames={"#n": f"namedUntil:{org}"},
            ExpressionAttributeValues={":u": {"N": str(int(until.timestamp()))}},
        )
        return item

    return racing


def test_an_org_named_again_since_the_read_is_kept_and_none_counted(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = NOW + timedelta(days=30)
    named(aws, **{"org-a": NOW - timedelta(days=1), "org-b": NOW - timedelta(days=2)})
    monkeypatch.setattr(access_table, "get_item", renamed_between(aws, "org-a", later))
    assert prune_named("node-a", NOW) == 0
    item = access(aws)
    assert names(item) == {
        "namedUntil:org-a": int(later.timestamp()),
        "namedUntil:org-b": int((NOW - timedelta(days=2)).timestamp()),
    }
    assert "version" not in item


class _Refusing:
    """The client, but every UpdateItem refused for a reason other than its condition."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def update_item(self, **_: Any) -> None:
        raise ClientError(
            {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow"}},
            "UpdateItem",
        )


def test_any_other_refusal_of_the_update_is_raised(
    aws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    named(aws, **{"org-a": NOW - timedelta(days=1)})
    client = clients.dynamodb()
    monkeypatch.setattr(
        access_table, "clients", SimpleNamespace(dynamodb=lambda: _Refusing(client))
    )
    with pytest.raises(ClientError, match="ProvisionedThroughputExceeded"):
        prune_named("node-a", NOW)
    assert names(access(aws)) == {"namedUntil:org-a": int((NOW - timedelta(days=1)).timestamp())}

"""The fleet loader writes what the API writes: nodes through the registration code, keys
through the key command's code."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from devstack.fleets import NODE_QUEUE_PREFIX
from reservations.dal import clients
from reservations_tools import keys
from reservations_tools.fleet.loader import FleetError, local_dead_letter_arn
from tests.support import fleets as f
from tests.support import state
from tests.support.lambdas import invoke, load_function, node_event

OPERATOR = {
    "key": "vl_test_node_operator",
    "orgId": "org-platform",
    "permissions": ["node.write"],
    "id": "node-operator",
}


def _fleet(*extra_keys: dict[str, Any]) -> dict[str, Any]:
    units = [f.unit("0000:04:00.0"), f.unit("0000:0a:00.0", allocClass="host", sellable=False,
                                            notSellableReason="held for the host")]  # fmt: skip
    return f.fleet([f.node("node-a", units)], [OPERATOR, *extra_keys])


def test_a_loaded_node_is_what_its_registration_writes(aws, load_fleet, monkeypatch):
    monkeypatch.setenv("NODE_QUEUE_PREFIX", NODE_QUEUE_PREFIX)
    monkeypatch.setenv("NODE_DEAD_LETTER_QUEUE_ARN", local_dead_letter_arn(boto3.client("sqs")))
    clients.reset()
    document = _fleet()
    load_fleet(document)
    before = state.whole_table(aws)
    node = document["nodes"][0]
    body = {"ownerOrgId": node["ownerOrgId"], "topologyGen": 1, "units": node["units"]}
    again = invoke(
        load_function("put_node"), node_event("node-a", body, "Bearer vl_test_node_operator")
    )
    assert again.status == 200  # the same node: nothing to change, nothing written
    assert state.whole_table(aws) == before
    stored = state.item(aws, "node-a", "#NODE")
    assert again.body["createdAt"] == stored["createdAt"]


def test_loaded_keys_have_unique_ids_like_the_commands_and_load_again(aws, load_fleet):
    load_fleet(_fleet())
    load_fleet(_fleet())  # the same key may keep its id
    markers = [i for i in state.whole_table(aws) if i["PK"].startswith(keys.KEYID_PREFIX)]
    assert f"{keys.KEYID_PREFIX}node-operator" in {m["PK"] for m in markers}
    assert len(markers) == len(f.KEYS) + 1


def test_a_fleet_key_cannot_take_an_id_another_key_has(aws, load_fleet, capsys):
    assert keys.main(["create", "--org", "org-x", "--permission", "reservation.read",
                      "--id", "taken"]) == 0  # fmt: skip
    other = {"key": "vl_test_other", "orgId": "org-acme", "permissions": [], "id": "taken"}
    with pytest.raises(FleetError, match="API key taken: key id taken is taken by another key"):
        load_fleet(_fleet(other))

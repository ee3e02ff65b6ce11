"""The curl line ``make run`` prints once the stack is ready works for the fleet it loaded:
it reads the first node's units with a key that may, or — with no node yet — registers one
with a key that may."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from devstack import fleet_documents as f
from devstack.run import demo_curl
from reservations.kernel.bodies import RawBody
from reservations.nodes.models.requests import parse_node_request
from reservations_tools.fleet.model import Fleet, parse_fleet

pytestmark = pytest.mark.disable_socket

API = "http://127.0.0.1:3000"


def keys_of(fleet: Fleet) -> dict[str, set[str]]:
    return {k.key: set(k.permissions) for k in fleet.api_keys}


def test_a_fleet_with_nodes_gets_a_read_of_its_first_node_by_an_operator_who_may():
    fleet = parse_fleet(f.DEMO_FLEET.read_text())
    words = shlex.split(demo_curl(fleet, API))
    assert words[:3] == ["curl", "-s", "-H"]
    key = words[3].removeprefix("Authorization: Bearer ")
    operators = {k.key for k in fleet.api_keys if k.org_id == fleet.platform_org_id}
    assert key in operators
    assert "reservation.read" in keys_of(fleet)[key]
    assert words[4] == f"{API}/v1/nodes/{fleet.nodes[0].id}/reservations/units"


def test_a_fleet_of_keys_only_gets_a_registration_the_api_accepts_by_a_key_that_may():
    fleet = parse_fleet(f.DEMO_FLEET.with_name("keys-only.json").read_text())
    words = shlex.split(demo_curl(fleet, API))
    assert words[:4] == ["curl", "-s", "-X", "PUT"]
    key = words[5].removeprefix("Authorization: Bearer ")
    assert "node.write" in keys_of(fleet)[key]
    assert re.fullmatch(rf"{API}/v1/nodes/node-x1", words[6])
    assert words[7] == "-d"
    request = parse_node_request(RawBody(words[8]))  # the API's own parsing: no 400
    assert request.owner_org_id in {k.org_id for k in fleet.api_keys}
    assert json.loads(words[8])["topologyGen"] == 1


def test_without_a_key_that_may_the_line_says_which_key_to_put():
    fleet = parse_fleet(json.dumps(f.fleet([], []) | {"apiKeys": []}))
    assert "Bearer vl_your_key" in demo_curl(fleet, API)
    with_node = f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])]) | {"apiKeys": []}
    assert "Bearer vl_your_key" in demo_curl(parse_fleet(json.dumps(with_node)), API)

"""Reclaim bodies no client should send, through the real handler over moto: each is a 400
(never a 5xx), and only once the key and the permission have been checked (401 -> 404 -> 400).
"""

from __future__ import annotations

import base64
import json
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import list_units_event, reclaim_event
from devstack.functions import HttpResult, invoke, load_function
from tests.support import state
from tests.support.bodies import comparable

pytestmark = pytest.mark.moto

UNIT = "0000:04:00.0"
BROKER = "Bearer vl_local_test_broker"
AUDIENCE_ONLY = "Bearer vl_local_test_lab_read"  # the reservation's audience, reservation.read only

# (name, body as API Gateway hands it over, marked base64)
BAD_BODIES = [
    ("not base64", "{not base64}", True),
    ("base64 without padding", "abc", True),
    ("not UTF-8", base64.b64encode(b'{"unitIds": ["\xff\xfe"]}').decode(), True),
    ("an encoded surrogate", base64.b64encode(b'{"reason": "\xed\xa0\x80"}').decode(), True),
    ("over 64 KiB", json.dumps({"unitIds": [UNIT]}) + " " * 65_536, False),
    ("over 64 KiB in base64", base64.b64encode(b"{" + b" " * 65_536 + b"}").decode(), True),
]

NAMES = [name for name, _, _ in BAD_BODIES]


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("reclaim")


@pytest.fixture
def fleet(load_fleet: Any) -> None:
    node = f.node(
        "node-a",
        [f.unit(UNIT)],
        [f.reservation("res-1", [UNIT], releasedUnitIds=[UNIT])],
        [f.workload("vm-1", [UNIT])],
    )
    audience_only = {"key": AUDIENCE_ONLY.split()[1], "orgId": "org-lab",
                     "permissions": ["reservation.read"]}  # fmt: skip
    load_fleet(f.fleet([node], extra_keys=[audience_only]))


def post(handler: ModuleType, body: str, base64_encoded: bool, key: str | None) -> HttpResult:
    event = reclaim_event("node-a", "res-1", body, key)
    event["isBase64Encoded"] = base64_encoded
    return invoke(handler, event)


@pytest.mark.parametrize(("name", "body", "base64_encoded"), BAD_BODIES, ids=NAMES)
def test_a_bad_body_without_a_key_is_401(handler, fleet, name, body, base64_encoded):
    result = post(handler, body, base64_encoded, key=None)
    assert result.status == 401, name
    assert result.body["code"] == "unauthorized"


@pytest.mark.parametrize(("name", "body", "base64_encoded"), BAD_BODIES, ids=NAMES)
def test_a_bad_body_without_the_permission_is_the_one_404(
    handler, fleet, name, body, base64_encoded
):
    reference = invoke(load_function("list_units"), list_units_event("node-zz", BROKER))
    result = post(handler, body, base64_encoded, key=AUDIENCE_ONLY)
    assert comparable(result) == comparable(reference), name


@pytest.mark.parametrize(("name", "body", "base64_encoded"), BAD_BODIES, ids=NAMES)
def test_a_bad_body_with_the_permission_is_400_naming_body_and_changes_nothing(
    handler, fleet, aws, name, body, base64_encoded
):
    before = state.whole_table(aws)
    result = post(handler, body, base64_encoded, key=BROKER)
    assert result.status == 400, (name, result.body_text)
    assert result.body["code"] == "invalid_request"
    assert [d["field"] for d in result.body["details"]] == ["body"]
    assert state.whole_table(aws) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("[" * 32_000 + "]" * 32_000, "body"),
        ('{"unitIds": 1' + "0" * 60_000 + "}", "body"),
        (f'{{"unitIds": ["{UNIT}"], "reason": NaN}}', "body"),
        (f'{{"unitIds": ["{UNIT}"], "dryRun": Infinity}}', "body"),
        (f'{{"unitIds": ["{UNIT}"], "reason": "\\ud800"}}', "reason"),
        (f'{{"unitIds": ["{UNIT}"], "x\\udc00": 1}}', None),
        ("null", "body"),
        ("42", "body"),
        (f'["{UNIT}"]', "body"),
    ],
    ids=[
        "deep nesting",
        "huge integer",
        "NaN",
        "Infinity",
        "lone surrogate",
        "lone surrogate in a key",
        "null",
        "a number",
        "an array",
    ],
)
def test_hostile_json_is_400_with_a_response_that_encodes(handler, fleet, aws, body, field):
    before = state.whole_table(aws)
    result = post(handler, body, False, key=BROKER)
    assert result.status == 400, result.body_text
    assert result.body["code"] == "invalid_request"
    result.body_text.encode("utf-8")  # a lone surrogate echoed back would not encode
    if field is not None:
        assert field in [d["field"] for d in result.body["details"]]
    assert state.whole_table(aws) == before


def test_a_valid_base64_body_is_reclaimed(handler, fleet):
    body = base64.b64encode(json.dumps({"unitIds": [UNIT], "dryRun": True}).encode()).decode()
    result = post(handler, body, True, key=BROKER)
    assert result.status == 200, result.body_text
    assert result.body["wouldTerminate"] == ["vm-1"]

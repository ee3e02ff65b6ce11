"""Create, get and list reservations, in-process over moto: what lands in the table, the
answers' bytes and headers, and the events in ``events/``."""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import create_event, event_file, get_event, list_event
from devstack.functions import invoke, load_function
from reservations.kernel.idempotency.models import Outcome
from tests.support import state
from tests.support.paging import bounded_pages

pytestmark = pytest.mark.moto

OWNER = "Bearer vl_local_test_writer"
OPERATOR = "Bearer vl_local_test_operator_writer"
LAB = "Bearer vl_local_test_lab"
STRANGER = "Bearer vl_local_test_stranger"
FREE = ["0000:0b:00.0", "0000:0c:00.0"]
WRITE = ["reservation.read", "reservation.write"]
WRITERS = [
    {"key": "vl_local_test_writer", "orgId": "org-acme", "permissions": WRITE},
    {"key": "vl_local_test_operator_writer", "orgId": "org-platform", "permissions": WRITE},
    {"key": "vl_local_test_write_only", "orgId": "org-acme", "permissions": ["reservation.write"]},
]


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    names = ("create_reservation", "get_reservation", "list_reservations")
    return {name: load_function(name) for name in names}


@pytest.fixture
def fleet(load_fleet):
    units = [f.unit(u) for u in ("0000:04:00.0", *FREE)] + [
        f.unit("0000:0d:00.0", allocClass="mig")
    ]
    res = f.reservation("res-1", ["0000:04:00.0"], topologyGen=1)
    load_fleet(f.fleet([f.node("node-a", units, [res])], extra_keys=WRITERS))


def create(functions, body: Any, key: str = OWNER, node: str = "node-a", idem: str | None = None):
    return invoke(functions["create_reservation"], create_event(node, body, key, idem))


def new(**body: Any) -> dict[str, Any]:
    return {"unitIds": FREE, "allowedOrgIds": ["org-lab"], **body}


# --- create -------------------------------------------------------------------------------


def test_a_create_is_201_with_location_and_lands_with_its_audit_record(functions, fleet, aws):
    result = create(functions, new(managingOrgIds=["org-broker"], reason="lab grows"))
    assert result.status == 201, result.body
    body = result.body
    assert re.fullmatch(r"res-[a-z0-9]{20}", body["id"])
    assert result.headers["location"] == f"/v1/nodes/node-a/reservations/{body['id']}"
    assert result.headers["content-type"] == "application/json"
    assert (body["status"], body["releasedUnitIds"], body["topologyGen"]) == ("active", [], 1)
    stored = state.reservation(aws, "node-a", body["id"])
    assert (stored["status"], stored["version"], stored["reservedUnitIds"]) == ("active", 1, FREE)
    assert state.item(aws, "node-a", "#NODE")["version"] == 2
    [event] = state.reservation_events(aws, "node-a", body["id"])
    assert (event["type"], event["data"]["actor"]["orgId"], event["data"]["reason"]) == (
        "reservation.created",
        "org-acme",
        "lab grows",
    )
    assert event["data"]["unitIds"] == FREE
    assert event["data"]["actor"]["keyId"]
    assert "vl_" not in event["data"]["actor"]["keyId"]


def test_the_location_answers_the_same_reservation(functions, fleet):
    created = create(functions, new(), key=OPERATOR)
    location = created.headers["location"]
    reservation_id = location.rsplit("/", 1)[1]
    fetched = invoke(functions["get_reservation"], get_event("node-a", reservation_id, OWNER))
    assert (fetched.status, fetched.body) == (200, created.body)


def test_an_overlapping_create_is_409_naming_each_unit_and_changes_nothing(functions, fleet, aws):
    before = state.whole_table(aws)
    result = create(functions, new(unitIds=["0000:0b:00.0", "0000:04:00.0"]))
    assert result.status == 409
    assert result.body["code"] == "units_unavailable"
    [detail] = result.body["details"]
    assert detail["field"] == "unitIds[1]"
    assert detail["problem"].startswith("0000:04:00.0: held by reservation res-1 (active)")
    assert state.whole_table(aws) == before


def test_a_unit_not_reservable_is_422_with_the_reason(functions, fleet):
    result = create(functions, new(unitIds=["0000:0d:00.0", "0000:ee:00.0"]))
    assert (result.status, result.body["code"]) == (422, "units_not_reservable")
    assert result.body["details"] == [
        {"field": "unitIds[0]", "problem": "0000:0d:00.0: allocation class mig is not reservable"},
        {"field": "unitIds[1]", "problem": "0000:ee:00.0: unit is not on this node"},
    ]


@pytest.mark.parametrize(
    ("field", "text"),
    [("endsAt", "9999-12-31T23:59:59-01:00"), ("startsAt", "0001-01-01T00:00:00+01:00")],
)
def test_a_time_outside_the_years_1970_to_9999_is_a_400_naming_it(functions, fleet, aws, field,
                                                                   text):  # fmt: skip
    before = state.whole_table(aws)
    result = create(functions, new(**{field: text}))
    assert (result.status, result.body["code"]) == (400, "invalid_request")
    assert result.body["details"] == [
        {"field": field, "problem": "must fall within the years 1970-9999 (UTC)"}
    ]
    assert state.whole_table(aws) == before


def test_a_term_shorter_than_a_second_is_a_400_saying_so(functions, fleet):
    result = create(functions, new(startsAt="2035-01-01T00:00:00Z",
                                   endsAt="2035-01-01T00:00:00.5Z"))  # fmt: skip
    assert result.status == 400
    assert result.body["details"] == [{
        "field": "endsAt",
        "problem": "must be at least 1 second after startsAt (times are kept to the second)",
    }]  # fmt: skip


def test_a_keyed_create_is_replayed_with_its_location_and_creates_once(functions, fleet, aws):
    first = create(functions, new(), idem="create-1")
    again = create(functions, new(), idem="create-1")
    assert (again.status, again.body_text) == (201, first.body_text)
    assert again.headers["location"] == first.headers["location"]
    reservations = [i for i in state.whole_table(aws) if i["SK"].startswith("RES#")]
    assert len(reservations) == 2  # res-1 and the one created
    other = create(functions, new(reason="another"), idem="create-1")
    assert (other.status, other.body["code"]) == (422, "idempotency_key_reused")


def test_a_stored_answer_without_headers_reads_back_without_any():
    """Records written before answers carried headers (reclaim's) read as they were."""
    from reservations.kernel.idempotency.table import stored_response_from_item

    item = {"requestHash": "h", "status": 200, "body": "{}", "expiresAt": "2030-01-01T00:00:00Z"}
    assert stored_response_from_item(item).outcome == Outcome(200, "{}")


@pytest.mark.parametrize(
    ("key", "node"),
    [
        (LAB, "node-a"),  # read and capacity, not write
        ("Bearer vl_local_test_broker", "node-a"),
        (OWNER, "node-zz"),
        (OWNER, "node%2Fa"),
    ],
)
def test_create_answers_the_one_404_byte_for_byte(functions, fleet, key, node):
    result = create(functions, new(), key=key, node=node)
    unknown = create(functions, new(), key=OWNER, node="node-unknown")
    assert (result.status, result.headers, result.body_text) == (
        404, unknown.headers, unknown.body_text,
    )  # fmt: skip


def test_create_without_a_key_is_401_before_the_body_is_read(functions, fleet):
    result = create(functions, "{not json", key=None)
    assert (result.status, result.headers["www-authenticate"]) == (401, "Bearer")


# --- the events in events/ (the demo fleet) ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "status", "code"),
    [
        ("created", 201, None),
        ("overlapping", 409, "units_unavailable"),
        ("not_reservable", 422, "units_not_reservable"),
        ("typo_field", 400, "invalid_request"),
    ],
)
def test_the_create_events_answer_as_named(functions, load_fleet, name, status, code):
    load_fleet(f.demo_fleet())
    result = invoke(functions["create_reservation"], event_file(f"create_reservation/{name}.json"))
    assert result.status == status, result.body
    assert result.body.get("code") == code


@pytest.mark.parametrize(
    ("event", "status"),
    [
        ("get_reservation/visible", 200),
        ("get_reservation/stranger", 404),
        ("list_reservations/owner", 200),
        ("list_reservations/filtered", 200),
        ("list_reservations/stranger", 404),
    ],
)
def test_the_read_events_answer_as_named(functions, load_fleet, event, status):
    load_fleet(f.demo_fleet())
    name = event.split("/")[0]
    result = invoke(functions[name], event_file(f"{event}.json"))
    assert result.status == status, result.body
    if event == "list_reservations/owner":
        assert [r["id"] for r in result.body["items"]] == ["res-a-active"]
        assert result.body["nextCursor"]
    if event == "list_reservations/filtered":
        assert [r["id"] for r in result.body["items"]] == ["res-a-pending"]


# --- get and list ---------------------------------------------------------------------------


def test_get_404s_are_identical_for_unknown_and_invisible(functions, fleet):
    answers = {
        (r.status, tuple(sorted(r.headers.items())), r.body_text)
        for r in (
            invoke(functions["get_reservation"], get_event("node-a", "res-1", STRANGER)),
            invoke(functions["get_reservation"], get_event("node-a", "res-404", OWNER)),
            invoke(functions["get_reservation"], get_event("node-404", "res-1", OWNER)),
            invoke(functions["get_reservation"], get_event("node-a", "res-1", "Bearer vl_local_test_write_only")),
        )
    }  # fmt: skip
    assert len(answers) == 1
    assert next(iter(answers))[0] == 404


def test_the_list_pages_through_every_reservation_once_with_signed_cursors(functions, fleet):
    made = sorted(create(functions, new(unitIds=[u])).body["id"] for u in FREE)
    seen, cursor, pages = [], None, 0
    for _ in bounded_pages():
        query = {"limit": "1", **({"cursor": cursor} if cursor else {})}
        result = invoke(functions["list_reservations"], list_event("node-a", OWNER, query))
        assert result.status == 200, result.body
        seen += [r["id"] for r in result.body["items"]]
        pages += 1
        cursor = result.body.get("nextCursor")
        if cursor is None:
            break
    assert seen == sorted(["res-1", *made])
    assert pages == 3


def test_the_audience_lists_its_reservations_and_a_stranger_gets_the_404(functions, fleet):
    lab = invoke(functions["list_reservations"], list_event("node-a", LAB))
    assert [r["id"] for r in lab.body["items"]] == ["res-1"]
    assert "nextCursor" not in lab.body
    stranger = invoke(functions["list_reservations"], list_event("node-a", STRANGER))
    unknown = invoke(functions["list_reservations"], list_event("node-404", OWNER))
    assert (stranger.status, stranger.headers, stranger.body_text) == (
        404, unknown.headers, unknown.body_text,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("query", "field"),
    [({"limit": "0"}, "limit"), ({"status": "over"}, "status"), ({"cursor": "abc.def"}, "cursor")],
)
def test_a_bad_list_query_is_a_400_naming_it(functions, fleet, query, field):
    result = invoke(functions["list_reservations"], list_event("node-a", OWNER, query))
    assert (result.status, result.body["code"]) == (400, "invalid_request")
    assert [d["field"] for d in result.body["details"]] == [field]


def test_a_list_without_the_signing_key_fails_before_any_aws_request(
    functions, fleet, monkeypatch, sent_requests
):
    from reservations.kernel.aws import clients

    monkeypatch.delenv("CURSOR_SIGNING_KEY")
    clients.reset()
    result = invoke(functions["list_reservations"], list_event("node-a", OWNER))
    assert result.status == 500
    assert "CURSOR_SIGNING_KEY" not in result.body_text
    assert ("dynamodb", "Query") not in sent_requests.sent

"""The fleet file: every rule of its format, and errors that name the field."""

import json
import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from devstack import fleet_documents as f
from reservations.kernel.auth import derive_key_id
from reservations.nodes.models.partition import ReservationStatus
from reservations.nodes.rules.status import effective_status
from reservations.terminations.ids import is_termination_id
from reservations_tools.fleet import loader
from reservations_tools.fleet.loader import (
    FleetError,
    check_sizes,
    describe,
    fleet_items,
    main,
    read_fleet,
)
from reservations_tools.fleet.model import parse_fleet
from reservations_tools.fleet.size import item_size

pytestmark = pytest.mark.disable_socket


def good() -> dict:
    return f.fleet(
        [
            f.node(
                "node-a",
                [f.unit("0000:04:00.0"), f.unit("0000:05:00.0")],
                [f.reservation("res-1", ["0000:04:00.0"], releasedUnitIds=["0000:04:00.0"])],
                [f.workload("vm-1", ["0000:04:00.0", "0000:05:00.0"])],
            )
        ]
    )


def problems(document: dict) -> str:
    with pytest.raises(ValidationError) as caught:
        parse_fleet(json.dumps(document))
    return describe(caught.value)


def test_the_demo_fleet_and_the_contract_example_load():
    parse_fleet(f.DEMO_FLEET.read_text())
    example = {
        "platformOrgId": "org-platform",
        "apiKeys": [
            {"key": "vl_local_operator", "orgId": "org-platform",
             "permissions": ["reservation.read", "reservation.capacity"]},
            {"key": "vl_local_owner_ro", "orgId": "org-acme", "permissions": ["reservation.read"],
             "revoked": False, "expiresAt": "2027-01-01T00:00:00Z"},
        ],
        "nodes": [{
            "id": "node-a1", "ownerOrgId": "org-acme", "topologyGen": 3,
            "units": [
                {"id": "0000:04:00.0", "allocClass": "vfio-group", "gpuModelId": "nvidia-h100-sxm5-80gb",
                 "gpuModelName": "NVIDIA H100 SXM5 80GB", "sellableGpus": 1, "sellable": True},
                {"id": "0000:0a:00.0", "allocClass": "host", "gpuModelId": "nvidia-h100-sxm5-80gb",
                 "sellableGpus": 1, "sellable": False, "notSellableReason": "held for the host"},
            ],
            "reservations": [
                {"id": "res-1", "status": "active", "startsAt": "2026-11-01T00:00:00Z",
                 "endsAt": "2027-11-01T00:00:00Z", "allowedOrgIds": ["org-lab"],
                 "managingOrgIds": ["org-broker"], "reservedUnitIds": ["0000:04:00.0"],
                 "releasedUnitIds": ["0000:04:00.0"], "contractRef": "C-2211",
                 "reason": "annual lab contract", "topologyGen": 3},
            ],
            "workloads": [
                {"id": "vm-17", "kind": "vm", "tier": "spot", "orgId": "org-spotbuyer",
                 "unitIds": ["0000:04:00.0"], "state": "running"},
            ],
        }],
    }  # fmt: skip
    fleet = parse_fleet(json.dumps(example))
    keys = [i for i in fleet_items(fleet, f.datetime_now()) if i["PK"].startswith("APIKEY#")]
    assert [k["platformOperator"] for k in keys] == [True, False]


@pytest.mark.parametrize("path", sorted(f.DEMO_FLEET.parent.glob("*.json")), ids=lambda p: p.name)
def test_a_loaded_fleet_reads_with_the_statuses_its_file_states(path):
    """A loaded node's units count as unchanged since anything was sold (generation 0), so
    no review is derived from a file: each reservation reads as the clock makes its stated
    status, exactly as it did before the node kept generations."""
    now = datetime.now(UTC)
    for fleet_node in parse_fleet(path.read_text()).nodes:
        snapshot = loader.build(fleet_node, now).snapshot
        assert snapshot.node.unit_changed_at == {u.id: 0 for u in snapshot.units}
        clock_only = replace(snapshot.node, unit_changed_at=None)
        for reservation in snapshot.reservations:
            assert effective_status(reservation, snapshot.node, now) is effective_status(
                reservation, clock_only, now
            )


def test_a_reservation_without_topology_gen_is_reviewed_by_a_later_change_of_its_units():
    document = f.fleet([f.node("node-a", [f.unit("0000:04:00.0")],
                               [f.reservation("res-1", ["0000:04:00.0"], startsAt=f.days(-9))])])  # fmt: skip
    now = datetime.now(UTC)
    snapshot = loader.build(parse_fleet(json.dumps(document)).nodes[0], now).snapshot
    [reservation] = snapshot.reservations
    assert reservation.topology_gen is None  # stated: back-dated beyond what a create takes
    assert effective_status(reservation, snapshot.node, now) is ReservationStatus.ACTIVE
    changed = replace(snapshot.node, topology_gen=2, unit_changed_at={"0000:04:00.0": 2})
    assert effective_status(reservation, changed, now) is ReservationStatus.NEEDS_REVIEW


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (
            lambda d: d["nodes"][0]["units"][0].update(sellable="true"),
            "nodes[0].units[0].sellable",
            "boolean",
        ),
        (lambda d: d["nodes"][0]["units"][0].update(id="04:00.0"), "nodes[0].units[0].id", "PCI"),
        (
            lambda d: d["nodes"][0].update(relasedUnitIds=[]),
            "nodes[0].relasedUnitIds",
            "not permitted",
        ),
        (lambda d: d.pop("platformOrgId"), "platformOrgId", "required"),
        (lambda d: d["apiKeys"][0].update(key="sk_live_x"), "apiKeys[0].key", "vl_"),
        (lambda d: d["nodes"][0]["reservations"][0].update(status="paused"), "status", "pending"),
        (
            lambda d: d["nodes"][0]["reservations"][0].update(startsAt="tomorrow"),
            "startsAt",
            "RFC 3339",
        ),
        (lambda d: d["nodes"][0]["workloads"][0].update(tier="gold"), "tier", "spot"),
        (lambda d: d["nodes"][0]["workloads"][0].update(kind="lxc"), "kind", "vm"),
    ],
)
def test_a_bad_field_is_named(mutate, field, words):
    document = good()
    mutate(document)
    message = problems(document)
    assert field in message
    assert words in message


U4, U5, U9, UA = "0000:04:00.0", "0000:05:00.0", "0000:09:00.0", "0000:0a:00.0"


def node0(d: dict) -> dict:
    return d["nodes"][0]


def res0(d: dict) -> dict:
    return d["nodes"][0]["reservations"][0]


def unit0(d: dict) -> dict:
    return d["nodes"][0]["units"][0]


def wl0(d: dict) -> dict:
    return d["nodes"][0]["workloads"][0]


# A cross-field rule names the very field at fault (for a repeat, the second place), and says
# what is wrong in words.
@pytest.mark.parametrize(
    ("mutate", "line"),
    [
        (
            lambda d: res0(d).update(releasedUnitIds=[U4, U5]),
            "nodes[0].reservations[0].releasedUnitIds[1]: unit 0000:05:00.0 is not in "
            "reservedUnitIds",
        ),
        (
            lambda d: res0(d).update(reservedUnitIds=[U4, U9], releasedUnitIds=[]),
            "nodes[0].reservations[0].reservedUnitIds[1]: reservation res-1 reserves unknown "
            "unit 0000:09:00.0",
        ),
        (
            lambda d: wl0(d).update(unitIds=[U4, U9]),
            "nodes[0].workloads[0].unitIds[1]: workload vm-1 uses unknown unit 0000:09:00.0",
        ),
        (
            lambda d: node0(d)["workloads"].append(f.workload("vm-2", [U5])),
            "nodes[0].workloads[1].unitIds[0]: unit 0000:05:00.0 is held by both vm-1 and vm-2",
        ),
        (
            lambda d: d["nodes"].append(d["nodes"][0]),
            "nodes[1].id: duplicate node id node-a (also at nodes[0].id)",
        ),
        (
            # Unit ids are compared as stored, lower-case.
            lambda d: node0(d)["units"].extend([f.unit(UA), f.unit(UA.upper())]),
            "nodes[0].units[3].id: duplicate unit id 0000:0a:00.0 (also at units[2].id)",
        ),
        (
            lambda d: node0(d)["reservations"].append(f.reservation("res-1", [U5])),
            "nodes[0].reservations[1].id: duplicate reservation id res-1 (also at "
            "reservations[0].id)",
        ),
        (
            lambda d: node0(d)["workloads"].append(f.workload("vm-1", [U4], state="terminated")),
            "nodes[0].workloads[1].id: duplicate workload id vm-1 (also at workloads[0].id)",
        ),
        (
            lambda d: res0(d).update(reservedUnitIds=[U4, U5, U4], releasedUnitIds=[]),
            "nodes[0].reservations[0].reservedUnitIds[2]: duplicate unit id 0000:04:00.0 "
            "(also at reservedUnitIds[0])",
        ),
        (
            lambda d: res0(d).update(reservedUnitIds=[U4, U5], releasedUnitIds=[U5, U5]),
            "nodes[0].reservations[0].releasedUnitIds[1]: duplicate unit id 0000:05:00.0 "
            "(also at releasedUnitIds[0])",
        ),
        (
            lambda d: wl0(d).update(unitIds=[U4, U5, U4]),
            "nodes[0].workloads[0].unitIds[2]: duplicate unit id 0000:04:00.0 (also at unitIds[0])",
        ),
        (
            lambda d: res0(d).update(endsAt=res0(d)["startsAt"]),
            "nodes[0].reservations[0].endsAt: must be after startsAt",
        ),
        (
            lambda d: res0(d).update(managingOrgIds=["org-b", "org-c", "org-b"]),
            "nodes[0].reservations[0].managingOrgIds[2]: duplicate org-b (also at index 0)",
        ),
        (
            lambda d: d["apiKeys"][0].update(permissions=["reservation.read"] * 2),
            "apiKeys[0].permissions[1]: duplicate reservation.read (also at index 0)",
        ),
    ],
)
def test_a_cross_field_error_names_the_field_at_fault(mutate, line):
    document = good()
    mutate(document)
    assert problems(document).splitlines() == [f"  {line}"]


def test_a_terminated_workload_holds_no_unit():
    document = good()
    node0(document)["workloads"].append(f.workload("vm-2", [U5], state="terminated"))
    parse_fleet(json.dumps(document))


def test_a_bad_file_is_reported_without_echoing_keys(tmp_path):
    document = good()
    document["apiKeys"][0]["key"] = "vl_secret value"  # has a space: invalid
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(document))
    with pytest.raises(FleetError) as caught:
        read_fleet(path)
    assert "apiKeys[0].key" in str(caught.value)
    assert "vl_secret" not in str(caught.value)


def _with_repeats(document: dict, *replacements: tuple[str, str]) -> str:
    """The document's JSON text with each first ``old`` replaced by ``new``: JSON objects
    with a name twice, which no dict can hold."""
    text = json.dumps(document)
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new, 1)
    return text


def _problems_in(text: str) -> list[str]:
    with pytest.raises(ValidationError) as caught:
        parse_fleet(text)
    return describe(caught.value).splitlines()


def test_a_name_given_twice_is_an_error_naming_its_place():
    # A JSON reader keeps the last value: unchecked, this unit would load as not sellable.
    text = _with_repeats(good(), ('"sellable": true', '"sellable": true, "sellable": false'))
    assert _problems_in(text) == ["  nodes[0].units[0].sellable: duplicate key"]


def test_every_repeated_name_is_named_once_in_file_order():
    platform, acme = '"platformOrgId": "org-platform"', '"orgId": "org-acme"'
    text = _with_repeats(
        good(),
        (platform, f'"platformOrgId": "org-x", {platform}'),
        (acme, f"{acme}, {acme}, {acme}"),  # three times: named once
        ('"state": "running"', '"state": "terminated", "state": "running"'),
    )
    assert _problems_in(text) == [
        "  platformOrgId: duplicate key",
        "  apiKeys[1].orgId: duplicate key",
        "  nodes[0].workloads[0].state: duplicate key",
    ]


def test_a_repeated_name_is_refused_even_where_the_schema_would_refuse_the_field():
    text = _with_repeats(good(), ('"nodes": [', '"x": {"y": [{"z": 1, "z": 2}]}, "nodes": ['))
    assert _problems_in(text) == ["  x.y[0].z: duplicate key"]


def test_validate_and_load_both_refuse_a_repeated_name(tmp_path, capsys):
    path = tmp_path / "fleet.json"
    path.write_text(_with_repeats(good(), ('"sellable": true', '"sellable": 1 , "sellable": true')))
    assert main(["validate", str(path)]) == 1
    assert "nodes[0].units[0].sellable: duplicate key" in capsys.readouterr().err
    # Refused before any client is made: the endpoint is never reached.
    assert main(["load", str(path), "--no-queues", "--endpoint-url", "http://127.0.0.1:9"]) == 1
    assert "nodes[0].units[0].sellable: duplicate key" in capsys.readouterr().err


def test_json_too_deep_or_too_large_to_read_is_reported_by_the_schema():
    deep = '{"nodes": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "recursion limit" in _problems_in(deep)[0]
    long_number = '{"platformOrgId": "o", "n": ' + "1" * 5000 + ', "n": 1}'
    assert "number out of range" in _problems_in(long_number)[0]


def test_not_json_is_reported(tmp_path):
    path = tmp_path / "fleet.json"
    path.write_text("{nodes: ")
    with pytest.raises(FleetError, match="invalid fleet file"):
        read_fleet(path)
    with pytest.raises(FleetError, match="cannot read"):
        read_fleet(tmp_path / "missing.json")


def test_units_derive_their_claim_from_live_workloads():
    document = good()
    document["nodes"][0]["workloads"][0]["state"] = "terminating"
    document["nodes"][0]["workloads"][0]["terminationId"] = "term-1"
    items = fleet_items(parse_fleet(json.dumps(document)), f.datetime_now())
    claims = {i["id"]: i.get("claimedBy") for i in items if i["SK"].startswith("UNIT#")}
    assert claims == {"0000:04:00.0": "vm:vm-1", "0000:05:00.0": "vm:vm-1"}
    document["nodes"][0]["workloads"][0]["state"] = "terminated"
    items = fleet_items(parse_fleet(json.dumps(document)), f.datetime_now())
    assert all(i.get("claimedBy") is None for i in items if i["SK"].startswith("UNIT#"))


# Every limit of the store is a validation error naming the field, before anything is written.


@pytest.mark.parametrize(
    ("mutate", "field", "words"),
    [
        (lambda d: res0(d).update(reason="x" * 400_000), "reservations[0].reason", "at most 1000"),
        (lambda d: res0(d).update(contractRef="C" * 201), "contractRef", "at most 200"),
        (lambda d: unit0(d).update(gpuModelName="n" * 257), "units[0].gpuModelName", "256"),
        (lambda d: unit0(d).update(notSellableReason="r" * 257), "notSellableReason", "256"),
        (lambda d: unit0(d).update(allocClass="a" * 129), "units[0].allocClass", "128"),
        (lambda d: unit0(d).update(gpuModelId="m" * 129), "units[0].gpuModelId", "128"),
        (lambda d: unit0(d).update(sellableGpus=10**40), "units[0].sellableGpus", "1024"),
        (lambda d: unit0(d).update(sellableGpus=1e40), "units[0].sellableGpus", "1024"),
        (lambda d: unit0(d).update(sellableGpus=1025), "units[0].sellableGpus", "1024"),
        (lambda d: res0(d).update(topologyGen=2**53), "reservations[0].topologyGen", "less"),
        (lambda d: d["nodes"][0].update(topologyGen=10**40), "nodes[0].topologyGen", "less"),
        (
            lambda d: d["nodes"][0].update(units=[f.unit(f"0000:{i:02x}:00.0") for i in range(65)]),
            "nodes[0].units",
            "at most 64",
        ),
    ],
)
def test_every_text_and_number_is_bounded(mutate, field, words):
    document = good()
    mutate(document)
    message = problems(document)
    assert field in message
    assert words in message
    assert len(message) < 500  # the value is not echoed


def test_the_largest_allowed_values_load():
    document = good()
    res0(document).update(reason="x" * 1000, contractRef="C" * 200, topologyGen=2**53 - 1)
    unit0(document).update(gpuModelName="n" * 256, sellableGpus=1024, allocClass="a" * 128)
    fleet_items(parse_fleet(json.dumps(document)), f.datetime_now())


ORG_FIELDS = [
    (lambda d, v: d.update(platformOrgId=v), "platformOrgId"),
    (lambda d, v: d["apiKeys"][0].update(orgId=v), "apiKeys[0].orgId"),
    (lambda d, v: d["nodes"][0].update(ownerOrgId=v), "nodes[0].ownerOrgId"),
    (lambda d, v: res0(d).update(allowedOrgIds=[v]), "reservations[0].allowedOrgIds[0]"),
    (lambda d, v: res0(d).update(managingOrgIds=["org-b", v]), "managingOrgIds[1]"),
    (lambda d, v: wl0(d).update(orgId=v), "workloads[0].orgId"),
]


@pytest.mark.parametrize(("mutate", "field"), ORG_FIELDS)
@pytest.mark.parametrize("org", ["o" * 129, "org acme", "-org", "", "org/acme"])
def test_org_ids_follow_the_id_rule(mutate, field, org):
    document = good()
    mutate(document, org)
    message = problems(document)
    assert field in message
    assert "1-128 letters" in message or "at least 1" in message


def test_org_id_lists_are_bounded_and_unique():
    document = good()
    res0(document).update(allowedOrgIds=[f"org-{i}" for i in range(51)])
    assert "allowedOrgIds: List should have at most 50" in problems(document)
    document = good()
    res0(document).update(managingOrgIds=["org-b", "org-b"])
    assert "managingOrgIds[1]: duplicate org-b (also at index 0)" in problems(document)


def test_permissions_are_the_known_names():
    document = good()
    document["apiKeys"][0]["permissions"] = [
        "reservation.read",
        "reservation.capacity",
        "reservation.write",
        "node.write",
        "workload.place",
    ]
    parse_fleet(json.dumps(document))
    document["apiKeys"][0]["permissions"] = ["reservation.read", "reservation.reed"]
    message = problems(document)
    assert "apiKeys[0].permissions[1]" in message
    assert "'reservation.capacity'" in message  # says what would be accepted


@pytest.mark.parametrize(
    "key",
    ["vl_" + "k" * 513, "vl_caf\u00e9_secret", "vl_", "VL_secret", "vl_secret\ttab", "vl_secret\n"],
)
def test_a_key_authentication_would_refuse_is_rejected_and_never_echoed(key):
    document = good()
    document["apiKeys"][1]["key"] = key
    message = problems(document)
    assert "apiKeys[1].key" in message
    assert "secret" not in message
    assert "kkkk" not in message


def test_every_key_authentication_accepts_loads():
    document = good()
    document["apiKeys"][0]["key"] = "vl_k"  # short, but a Bearer header would carry it
    document["apiKeys"][1]["key"] = "vl_" + "~" * 512
    parse_fleet(json.dumps(document))


@pytest.mark.parametrize("termination_id", ["t" * 101, "term 1", "", "term-\u00e9"])
def test_a_termination_id_sqs_would_refuse_is_rejected(termination_id):
    document = good()
    wl0(document).update(state="terminating", terminationId=termination_id)
    assert "nodes[0].workloads[0].terminationId" in problems(document)


def test_duplicate_key_ids_are_rejected_naming_the_second():
    document = good()
    document["apiKeys"][0]["id"] = "key-ops"
    document["apiKeys"][2]["id"] = "key-ops"
    assert "apiKeys[2].id: same id as apiKeys[0]" in problems(document)
    # An explicit id may not take the id derived for another key either.
    document = good()
    document["apiKeys"][3]["id"] = derive_key_id(document["apiKeys"][1]["key"])
    assert "apiKeys[3].id: same id as apiKeys[1]" in problems(document)


def test_a_repeated_key_is_named_by_position_only():
    document = good()
    document["apiKeys"][4]["key"] = document["apiKeys"][1]["key"]
    message = problems(document)
    assert "apiKeys[4].key: same key as apiKeys[1]" in message
    assert document["apiKeys"][1]["key"] not in message


@pytest.mark.parametrize("tier", ["reserved", "on-demand"])
def test_only_a_spot_workload_can_be_terminating(tier):
    document = good()
    wl0(document).update(state="terminating", tier=tier)
    assert "nodes[0].workloads[0].tier: a terminating workload must be of tier spot" in problems(
        document
    )


def _terminating(reservations: list[dict], node_id: str = "node-a", wl_id: str = "vm-1") -> dict:
    units = [f.unit("0000:04:00.0"), f.unit("0000:05:00.0")]
    workload = f.workload(wl_id, ["0000:05:00.0", "0000:04:00.0"], state="terminating")
    return f.fleet([f.node(node_id, units, reservations, [workload])])


def _workload_item(document: dict) -> dict:
    [item] = [
        i
        for i in fleet_items(parse_fleet(json.dumps(document)), f.datetime_now())
        if i["SK"].startswith("WL#")
    ]
    return item


def test_a_fleet_made_termination_id_fits_sqs_whatever_the_ids():
    long_node, long_workload = "n" * 128, "w" * 128
    item = _workload_item(
        _terminating([f.reservation("res-1", ["0000:04:00.0"])], long_node, long_workload)
    )
    assert is_termination_id(item["terminationId"])
    assert item["terminationId"].startswith("term-fleet-")
    again = _workload_item(
        _terminating([f.reservation("res-1", ["0000:04:00.0"])], long_node, long_workload)
    )
    other = _workload_item(
        _terminating([f.reservation("res-1", ["0000:04:00.0"])], long_node, "w" * 127)
    )
    assert again["terminationId"] == item["terminationId"]  # stable across loads
    assert other["terminationId"] != item["terminationId"]


def test_a_termination_carries_the_governing_reservation():
    reservations = [
        f.reservation("res-a-old", ["0000:04:00.0"], status="expired"),
        f.reservation("res-b-now", ["0000:05:00.0"]),
        f.reservation("res-c-later", ["0000:04:00.0"], status="pending", startsAt=f.days(30)),
    ]
    item = _workload_item(_terminating(reservations))
    assert item["terminationReservationId"] == "res-b-now"
    assert item["openTermination"] == "open"


def test_a_review_reservation_governs_and_a_started_pending_one_too():
    review = f.reservation("res-z", ["0000:05:00.0"], status="needs-review")
    assert _workload_item(_terminating([review]))["terminationReservationId"] == "res-z"
    started = f.reservation("res-s", ["0000:05:00.0"], status="pending", startsAt=f.days(-1))
    assert _workload_item(_terminating([started]))["terminationReservationId"] == "res-s"


def test_without_a_governing_reservation_the_latest_holder_is_named():
    # The reservation was cancelled while its termination was under way.
    reservations = [
        f.reservation("res-1", ["0000:04:00.0"], status="cancelled", startsAt=f.days(-20)),
        f.reservation("res-2", ["0000:05:00.0"], status="expired", startsAt=f.days(-5)),
    ]
    assert _workload_item(_terminating(reservations))["terminationReservationId"] == "res-2"


def test_a_terminating_workload_on_no_reserved_unit_is_rejected():
    document = _terminating([f.reservation("res-1", [])])
    message = problems(document)
    assert "nodes[0].workloads[0].unitIds: terminating workload vm-1 is on no unit" in message


# The item-size backstop: what DynamoDB would refuse is refused before the first write.


def test_item_sizes_are_counted_as_dynamodb_counts_them():
    assert item_size({"name": {"S": "caf\u00e9"}}) == 4 + 5
    assert item_size({"n": {"N": "12345"}, "m": {"N": "-0.0100"}}) == (1 + 4) + (1 + 3)
    assert item_size({"b": {"BOOL": True}, "z": {"NULL": True}}) == 4
    assert item_size({"l": {"L": [{"S": "ab"}, {"N": "7"}]}}) == 1 + 3 + (1 + 2) + (1 + 2)
    assert item_size({"m": {"M": {"k": {"S": "v"}}}}) == 1 + 3 + (1 + 1 + 1)
    assert item_size({"s": {"SS": ["a", "bc"]}, "b": {"B": b"xyz"}}) == (1 + 3) + (1 + 3)


def test_an_item_over_400_kb_is_refused_naming_it():
    fleet = parse_fleet(json.dumps(good()))
    built = fleet_items(fleet, f.datetime_now())
    [reservation] = [i for i in built if i["SK"] == "RES#res-1"]
    reservation["reason"] = "x" * (400 * 1024)  # as a future field without a bound would be
    with pytest.raises(FleetError, match=r"node node-a, item RES#res-1: 4\d{5} bytes, over"):
        check_sizes(built)
    reservation["reason"] = "x" * (400 * 1024 - 1000)
    check_sizes(built)


def test_validate_runs_the_size_backstop(tmp_path, monkeypatch, capsys):
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(good()))
    assert main(["validate", str(path)]) == 0
    monkeypatch.setattr(loader, "MAX_ITEM_BYTES", 250)  # the reservation item is larger
    assert main(["validate", str(path)]) == 1
    assert re.search(r"node node-a, item RES#res-1: \d+ bytes, over", capsys.readouterr().err)


@pytest.mark.parametrize("prefix", ["", "stack node-", "p" * 41])
def test_a_queue_prefix_the_template_would_refuse_is_a_usage_error_before_anything_runs(
    prefix, capsys
):
    with pytest.raises(SystemExit) as exited:
        main(["load", str(f.DEMO_FLEET), "--queue-prefix", prefix, "--endpoint-url", "http://x"])
    assert exited.value.code == 2
    assert "argument --queue-prefix: queue prefix must be 1-40 of A-Z a-z 0-9 _ -" in (
        capsys.readouterr().err
    )


def test_an_integer_written_with_a_zero_fraction_is_that_integer_and_a_fraction_is_named():
    document = good()
    document["nodes"][0]["topologyGen"] = 3.0
    document["nodes"][0]["units"][0]["sellableGpus"] = 2.0
    node = parse_fleet(json.dumps(document)).nodes[0]
    assert (node.topology_gen, node.units[0].sellable_gpus) == (3, 2)
    assert type(node.topology_gen) is int
    document["nodes"][0]["units"][0]["sellableGpus"] = 2.5
    assert "nodes[0].units[0].sellableGpus: Input should be a valid integer" in problems(document)

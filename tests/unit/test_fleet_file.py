"""The fleet file: every rule of its format, and errors that name the field."""

import json

import pytest
from pydantic import ValidationError

from reservations.fleet.loader import FleetError, describe, fleet_items, read_fleet
from reservations.fleet.model import parse_fleet
from tests.support import fleets as f


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
            "datetime",
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


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (
            lambda d: d["nodes"][0]["reservations"][0].update(releasedUnitIds=["0000:05:00.0"]),
            "releasedUnitIds not in reservedUnitIds",
        ),
        (
            lambda d: d["nodes"][0]["reservations"][0].update(
                reservedUnitIds=["0000:09:00.0"], releasedUnitIds=[]
            ),
            "reserves unknown units: 0000:09:00.0",
        ),
        (
            lambda d: d["nodes"][0]["workloads"].append(f.workload("vm-2", ["0000:05:00.0"])),
            "held by both vm-1 and vm-2",
        ),
        (lambda d: d["nodes"].append(d["nodes"][0]), "duplicate node ids: node-a"),
        (lambda d: d["nodes"][0]["units"].append(f.unit("0000:04:00.0")), "duplicate unit ids"),
        (
            lambda d: d["nodes"][0]["reservations"][0].update(
                endsAt=d["nodes"][0]["reservations"][0]["startsAt"]
            ),
            "endsAt must be after startsAt",
        ),
    ],
)
def test_cross_references_are_checked(mutate, words):
    document = good()
    mutate(document)
    assert words in problems(document)


def test_a_bad_file_is_reported_without_echoing_keys(tmp_path):
    document = good()
    document["apiKeys"][0]["key"] = "vl_secret value"  # has a space: invalid
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(document))
    with pytest.raises(FleetError) as caught:
        read_fleet(path)
    assert "apiKeys[0].key" in str(caught.value)
    assert "vl_secret" not in str(caught.value)


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

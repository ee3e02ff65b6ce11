"""A fleet file's load, as usage records it: what the fold reads of the node, in parts that
each fit an item, read back as one ``node.loaded`` fact whatever the node's size."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from reservations.usage.rules.facts import NODE_LOADED
from reservations.usage.table import PART_BYTES, _loads, loaded_items

AT = datetime(2026, 12, 1, 8, 30, tzinfo=UTC)


def _node(reservations: int) -> dict[str, object]:
    return {
        "id": "node-big",
        "ownerOrgId": "org-acme",
        "topologyGen": 3,
        "units": [{"id": "0000:04:00.0", "allocClass": "vfio-group", "sellableGpus": 2,
                   "gpuModelName": "NVIDIA H100", "sellable": True}],
        "reservations": [{"id": f"res-{n:05d}", "status": "pending",
                          "startsAt": f"2030-01-01T00:{n % 60:02d}:00Z",
                          "reservedUnitIds": ["0000:04:00.0"], "contractRef": "c" * 100,
                          "allowedOrgIds": ["org-lab"]} for n in range(reservations)],
        "workloads": [{"id": "vm-1", "kind": "vm", "tier": "spot", "orgId": "org-x",
                       "unitIds": ["0000:04:00.0"], "state": "running"}],
    }  # fmt: skip


def _read_back(items: list[dict[str, str]]) -> list[dict[str, object]]:
    return _loads(((i["SK"], i["part"]) for i in sorted(items, key=lambda i: i["SK"])), "node-big")


def test_a_small_node_is_one_part_holding_only_what_the_fold_reads():
    [item] = loaded_items("node-big", _node(2), AT)
    assert (item["PK"], item["SK"]) == ("USAGE#node-big", "LOADED#2026-12-01T08:30:00.000Z#0000")
    [fact] = _read_back([item])
    assert (fact["type"], fact["time"], fact["subject"]) == (
        NODE_LOADED, "2026-12-01T08:30:00.000Z", "nodes/node-big")  # fmt: skip
    data = fact["data"]
    assert data["units"] == [{"id": "0000:04:00.0", "sellableGpus": 2}]
    assert data["workloads"] == [
        {"id": "vm-1", "tier": "spot", "unitIds": ["0000:04:00.0"], "state": "running"}
    ]
    assert data["reservations"][0] == {"id": "res-00000", "status": "pending",
                                       "startsAt": "2030-01-01T00:00:00Z",
                                       "reservedUnitIds": ["0000:04:00.0"]}  # fmt: skip


def test_a_node_of_10000_reservations_is_split_and_read_back_whole():
    items = loaded_items("node-big", _node(10_000), AT)
    assert len(items) > 1
    assert all(len(item["part"]) <= PART_BYTES for item in items)
    assert len({item["SK"] for item in items}) == len(items)
    [fact] = _read_back(items)
    ids = [r["id"] for r in fact["data"]["reservations"]]
    assert ids == [f"res-{n:05d}" for n in range(10_000)]
    assert fact["data"]["units"] == [{"id": "0000:04:00.0", "sellableGpus": 2}]


def test_two_loads_are_two_facts_each_whole():
    first = loaded_items("node-big", _node(1), AT)
    second = loaded_items("node-big", _node(3), AT.replace(hour=9))
    facts = _read_back(first + second)
    assert [len(f["data"]["reservations"]) for f in facts] == [1, 3]
    assert json.dumps(facts[0]["data"]["units"]) == json.dumps(facts[1]["data"]["units"])

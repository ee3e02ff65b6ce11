"""Fleet documents built in code (for the tests and the benchmark), with dates relative to
now so they never go stale."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEMO_FLEET = ROOT / "fleets" / "demo.json"


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def demo_fleet(with_past: bool = False) -> dict[str, Any]:
    """The demo fleet; without node-d9's made-up past unless asked (3,000 ended reservations
    cost the in-process tests that load it seconds each; the history's own tests load one)."""
    document: dict[str, Any] = json.loads(DEMO_FLEET.read_text())
    if not with_past:
        for node in document["nodes"]:
            node.pop("generatedPastReservations", None)
    return document


def days(n: float) -> str:
    """An RFC 3339 time ``n`` days from now (negative: in the past)."""
    return iso(datetime.now(UTC) + timedelta(days=n))


def unit(unit_id: str, **overrides: Any) -> dict[str, Any]:
    base = {
        "id": unit_id,
        "allocClass": "vfio-group",
        "gpuModelId": "nvidia-h100-sxm5-80gb",
        "gpuModelName": "NVIDIA H100 SXM5 80GB",
        "sellableGpus": 1,
        "sellable": True,
    }
    base.update(overrides)
    return base


def reservation(res_id: str, units: list[str], **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": res_id,
        "status": "active",
        "startsAt": days(-10),
        "endsAt": days(300),
        "allowedOrgIds": ["org-lab"],
        "managingOrgIds": ["org-broker"],
        "reservedUnitIds": units,
        "releasedUnitIds": [],
    }
    base.update(overrides)
    return base


def workload(wl_id: str, units: list[str], tier: str = "spot", **overrides: Any) -> dict[str, Any]:
    base = {
        "id": wl_id,
        "kind": "vm",
        "tier": tier,
        "orgId": "org-spotbuyer",
        "unitIds": units,
        "state": "running",
    }
    base.update(overrides)
    return base


KEYS = {
    "operator": ("vl_local_test_operator", "org-platform"),
    "owner": ("vl_local_test_owner", "org-acme"),
    "broker": ("vl_local_test_broker", "org-broker"),
    "lab": ("vl_local_test_lab", "org-lab"),
    "stranger": ("vl_local_test_stranger", "org-stranger"),
}
BOTH = ["reservation.read", "reservation.capacity"]


def fleet(
    nodes: list[dict[str, Any]], extra_keys: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A fleet with one key per role (see KEYS) plus ``extra_keys``."""
    keys = [{"key": key, "orgId": org, "permissions": BOTH} for key, org in KEYS.values()]
    return {
        "platformOrgId": "org-platform",
        "apiKeys": keys + copy.deepcopy(extra_keys or []),
        "nodes": nodes,
    }


def node(
    node_id: str,
    units: list[dict[str, Any]],
    reservations: list[dict[str, Any]] = (),  # type: ignore[assignment]
    workloads: list[dict[str, Any]] = (),
    owner: str = "org-acme",
) -> dict[str, Any]:  # type: ignore[assignment]
    return {
        "id": node_id,
        "ownerOrgId": owner,
        "topologyGen": 1,
        "units": units,
        "reservations": list(reservations),
        "workloads": list(workloads),
    }


def datetime_now() -> datetime:
    return datetime.now(UTC)

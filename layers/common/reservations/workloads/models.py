"""The body of a workload's placement, parsed strictly (anything not understood is a 400)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, StrictStr

from reservations.kernel.bodies import RawBody, StrictBody, required_body
from reservations.kernel.ids import RESOURCE_ID
from reservations.nodes import UnitIds, normalized_unit_ids, unit_ids_field


class PlaceWorkloadRequest(StrictBody):
    """The body of place: the scheduler's workload, whose org, at which tier, on which units."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "vm-42",
                    "kind": "vm",
                    "tier": "spot",
                    "orgId": "org-spotbuyer",
                    "unitIds": ["0000:06:00.0"],
                }
            ]
        },
    )

    id: StrictStr = Field(pattern=RESOURCE_ID, description="the workload's id, unique on the node")
    kind: Literal["vm", "pod"]
    tier: Literal["spot", "reserved", "on-demand"]
    org_id: StrictStr = Field(alias="orgId", pattern=RESOURCE_ID)
    unit_ids: UnitIds = unit_ids_field(
        "units of this node, PCI addresses (compared case-insensitively)"
    )


def parse_place_request(raw: RawBody) -> PlaceWorkloadRequest:
    """The validated placement, unit ids normalised; 400 ``invalid_request`` naming the field."""
    request = required_body(raw, PlaceWorkloadRequest)
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})

"""The body of the node operator's call to register or update a node (a re-affirm's is the
lifecycle slice's). Parsed as strictly as every other body (unknown fields, wrong types and
duplicate keys are a 400 naming the field)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, StrictBool, StrictStr
from pydantic.config import JsonDict

from reservations.kernel.bodies import (
    JsonInt,
    RawBody,
    StrictBody,
    invalid_body,
    required_body,
)
from reservations.kernel.errors import FieldProblem
from reservations.kernel.ids import RESOURCE_ID
from reservations.nodes.ids import PCI_ADDRESS, normalize_unit_id

MAX_UNITS_PER_NODE = 64
MAX_TOPOLOGY_GEN = 2**53 - 1  # exact in every JSON reader
MAX_NAME = 256  # GPU model names, why a unit is not sellable
MAX_TOKEN = 128  # allocation classes, GPU model ids
MAX_SELLABLE_GPUS = 1024

_Token = Annotated[StrictStr, Field(min_length=1, max_length=MAX_TOKEN)]
_Name = Annotated[StrictStr, Field(min_length=1, max_length=MAX_NAME)]


UNIT_EXAMPLE: JsonDict = {
    "id": "0000:04:00.0",
    "allocClass": "vfio-group",
    "gpuModelId": "nvidia-h100-sxm5-80gb",
    "gpuModelName": "NVIDIA H100 SXM5 80GB",
    "sellableGpus": 1,
    "sellable": True,
}


class UnitSpec(StrictBody):
    """One unit as the node reports it (the fleet file's unit object)."""

    model_config = ConfigDict(json_schema_extra={"examples": [UNIT_EXAMPLE]})

    id: Annotated[StrictStr, Field(pattern=PCI_ADDRESS)]
    alloc_class: _Token = Field(alias="allocClass")
    gpu_model_id: _Token = Field(alias="gpuModelId")
    gpu_model_name: _Name | None = Field(default=None, alias="gpuModelName")
    sellable_gpus: JsonInt = Field(alias="sellableGpus", ge=0, le=MAX_SELLABLE_GPUS)
    sellable: StrictBool
    not_sellable_reason: _Name | None = Field(default=None, alias="notSellableReason")


class NodeRequest(StrictBody):
    """``PUT /v1/nodes/{nodeId}``: who owns the node, its topology generation and units."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "ownerOrgId": "org-acme",
                    "topologyGen": 4,
                    "units": [UNIT_EXAMPLE],
                }
            ]
        }
    )

    owner_org_id: Annotated[StrictStr, Field(pattern=RESOURCE_ID)] = Field(alias="ownerOrgId")
    topology_gen: JsonInt = Field(alias="topologyGen", ge=1, le=MAX_TOPOLOGY_GEN)
    units: list[UnitSpec] = Field(
        min_length=1,
        max_length=MAX_UNITS_PER_NODE,
        description="1-64 units, one host's IOMMU groups; ids unique (compared case-insensitively)",
    )


def _normalized_units(request: NodeRequest) -> NodeRequest:
    """Unit ids lower-case; a repeat (in any case) is a 400 naming it."""
    seen: set[str] = set()
    problems = []
    units = []
    for index, unit in enumerate(request.units):
        canonical = normalize_unit_id(unit.id) or unit.id
        if canonical in seen:
            problems.append(FieldProblem(f"units[{index}].id", f"duplicate of {canonical}"))
        seen.add(canonical)
        units.append(unit.model_copy(update={"id": canonical}))
    if problems:
        raise invalid_body(problems)
    return request.model_copy(update={"units": units})


def parse_node_request(raw: RawBody) -> NodeRequest:
    """The validated node body, unit ids normalised; 400 ``invalid_request`` naming the field."""
    return _normalized_units(required_body(raw, NodeRequest))

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.place_workload_request_kind import check_place_workload_request_kind
from ..models.place_workload_request_kind import PlaceWorkloadRequestKind
from ..models.place_workload_request_tier import check_place_workload_request_tier
from ..models.place_workload_request_tier import PlaceWorkloadRequestTier
from typing import cast






T = TypeVar("T", bound="PlaceWorkloadRequest")



@_attrs_define
class PlaceWorkloadRequest:
    """ The body of place: the scheduler's workload, whose org, at which tier, on which units.

        Attributes:
            id (str): the workload's id, unique on the node
            kind (PlaceWorkloadRequestKind):
            org_id (str):
            tier (PlaceWorkloadRequestTier):
            unit_ids (list[str]): units of this node, PCI addresses (compared case-insensitively)
     """

    id: str
    kind: PlaceWorkloadRequestKind
    org_id: str
    tier: PlaceWorkloadRequestTier
    unit_ids: list[str]





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        kind: str = self.kind

        org_id = self.org_id

        tier: str = self.tier

        unit_ids = self.unit_ids




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "kind": kind,
            "orgId": org_id,
            "tier": tier,
            "unitIds": unit_ids,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        kind = check_place_workload_request_kind(d.pop("kind"))




        org_id = d.pop("orgId")

        tier = check_place_workload_request_tier(d.pop("tier"))




        unit_ids = cast(list[str], d.pop("unitIds"))


        place_workload_request = cls(
            id=id,
            kind=kind,
            org_id=org_id,
            tier=tier,
            unit_ids=unit_ids,
        )

        return place_workload_request


from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast






T = TypeVar("T", bound="PlaceWorkloadRequest")



@_attrs_define
class PlaceWorkloadRequest:
    """ The body of place: the scheduler's workload, whose org, at which tier, on which units.

        Attributes:
            id (str): the workload's id, unique on the node
            kind (str): known values: vm, pod; a newer API may send others
            org_id (str):
            tier (str): known values: spot, reserved, on-demand; a newer API may send others
            unit_ids (list[str]): units of this node, PCI addresses (compared case-insensitively)
     """

    id: str
    kind: str
    org_id: str
    tier: str
    unit_ids: list[str]





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        kind = self.kind

        org_id = self.org_id

        tier = self.tier

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

        kind = d.pop("kind")

        org_id = d.pop("orgId")

        tier = d.pop("tier")

        unit_ids = cast(list[str], d.pop("unitIds"))


        place_workload_request = cls(
            id=id,
            kind=kind,
            org_id=org_id,
            tier=tier,
            unit_ids=unit_ids,
        )

        return place_workload_request


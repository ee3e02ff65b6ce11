from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.unit_spec import UnitSpec





T = TypeVar("T", bound="NodeRequest")



@_attrs_define
class NodeRequest:
    """ ``PUT /v1/nodes/{nodeId}``: who owns the node, its topology generation and units.

        Attributes:
            owner_org_id (str):
            topology_gen (int):
            units (list[UnitSpec]): 1-64 units, one host's IOMMU groups; ids unique (compared case-insensitively)
     """

    owner_org_id: str
    topology_gen: int
    units: list[UnitSpec]





    def to_dict(self) -> dict[str, Any]:
        from ..models.unit_spec import UnitSpec # noqa: PLC0415
        owner_org_id = self.owner_org_id

        topology_gen = self.topology_gen

        units = []
        for units_item_data in self.units:
            units_item = units_item_data.to_dict()
            units.append(units_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "ownerOrgId": owner_org_id,
            "topologyGen": topology_gen,
            "units": units,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.unit_spec import UnitSpec # noqa: PLC0415
        d = dict(src_dict)
        owner_org_id = d.pop("ownerOrgId")

        topology_gen = d.pop("topologyGen")

        units = []
        _units = d.pop("units")
        for units_item_data in (_units):
            units_item = UnitSpec.from_dict(units_item_data)



            units.append(units_item)


        node_request = cls(
            owner_org_id=owner_org_id,
            topology_gen=topology_gen,
            units=units,
        )

        return node_request


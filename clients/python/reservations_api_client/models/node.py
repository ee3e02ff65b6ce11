from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="Node")



@_attrs_define
class Node:
    """ A node as ``PUT /v1/nodes/{nodeId}`` answers it.

        Attributes:
            created_at (datetime.datetime):
            id (str):
            owner_org_id (str):
            topology_gen (int):
            unit_ids (list[str]): sorted
            updated_at (datetime.datetime):
     """

    created_at: datetime.datetime
    id: str
    owner_org_id: str
    topology_gen: int
    unit_ids: list[str]
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        owner_org_id = self.owner_org_id

        topology_gen = self.topology_gen

        unit_ids = self.unit_ids



        updated_at = self.updated_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "createdAt": created_at,
            "id": id,
            "ownerOrgId": owner_org_id,
            "topologyGen": topology_gen,
            "unitIds": unit_ids,
            "updatedAt": updated_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("createdAt"))




        id = d.pop("id")

        owner_org_id = d.pop("ownerOrgId")

        topology_gen = d.pop("topologyGen")

        unit_ids = cast(list[str], d.pop("unitIds"))


        updated_at = datetime.datetime.fromisoformat(d.pop("updatedAt"))




        node = cls(
            created_at=created_at,
            id=id,
            owner_org_id=owner_org_id,
            topology_gen=topology_gen,
            unit_ids=unit_ids,
            updated_at=updated_at,
        )


        node.additional_properties = d
        return node

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties

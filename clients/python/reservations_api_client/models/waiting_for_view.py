from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="WaitingForView")



@_attrs_define
class WaitingForView:
    """ A spot workload a waiting workload waits on: its termination and deadline as of the
    placement.

        Attributes:
            terminate_at (datetime.datetime):
            termination_id (str):
            workload_id (str):
     """

    terminate_at: datetime.datetime
    termination_id: str
    workload_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        terminate_at = self.terminate_at.isoformat()

        termination_id = self.termination_id

        workload_id = self.workload_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "terminateAt": terminate_at,
            "terminationId": termination_id,
            "workloadId": workload_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        terminate_at = datetime.datetime.fromisoformat(d.pop("terminateAt"))




        termination_id = d.pop("terminationId")

        workload_id = d.pop("workloadId")

        waiting_for_view = cls(
            terminate_at=terminate_at,
            termination_id=termination_id,
            workload_id=workload_id,
        )


        waiting_for_view.additional_properties = d
        return waiting_for_view

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

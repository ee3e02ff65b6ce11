from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="WorkloadTermination")



@_attrs_define
class WorkloadTermination:
    """ A terminating workload's termination: the message the node was sent.

        Attributes:
            id (str):
            requested_at (datetime.datetime | Unset): when the reclaim asked for it (its commit, to the millisecond)
            reservation_id (str | Unset): the reclaim's reservation
            terminate_at (datetime.datetime | Unset): the deadline: requestedAt plus the reclaim's notice (the larger of its
                noticeSeconds and its reservation's policy's), never before the workload's promises (requestedAt plus
                promisedNoticeSeconds, createdAt plus promisedMinRunSeconds); the earliest, when several reclaims asked; the
                node stops it then, not before unless it stops by itself
     """

    id: str
    requested_at: datetime.datetime | Unset = UNSET
    reservation_id: str | Unset = UNSET
    terminate_at: datetime.datetime | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        requested_at: str | Unset = UNSET
        if not isinstance(self.requested_at, Unset):
            requested_at = self.requested_at.isoformat()

        reservation_id = self.reservation_id

        terminate_at: str | Unset = UNSET
        if not isinstance(self.terminate_at, Unset):
            terminate_at = self.terminate_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
        })
        if requested_at is not UNSET:
            field_dict["requestedAt"] = requested_at
        if reservation_id is not UNSET:
            field_dict["reservationId"] = reservation_id
        if terminate_at is not UNSET:
            field_dict["terminateAt"] = terminate_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        _requested_at = d.pop("requestedAt", UNSET)
        requested_at: datetime.datetime | Unset
        if isinstance(_requested_at,  Unset):
            requested_at = UNSET
        else:
            requested_at = datetime.datetime.fromisoformat(_requested_at)




        reservation_id = d.pop("reservationId", UNSET)

        _terminate_at = d.pop("terminateAt", UNSET)
        terminate_at: datetime.datetime | Unset
        if isinstance(_terminate_at,  Unset):
            terminate_at = UNSET
        else:
            terminate_at = datetime.datetime.fromisoformat(_terminate_at)




        workload_termination = cls(
            id=id,
            requested_at=requested_at,
            reservation_id=reservation_id,
            terminate_at=terminate_at,
        )


        workload_termination.additional_properties = d
        return workload_termination

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

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="Unit")



@_attrs_define
class Unit:
    """ One allocatable GPU unit as ``GET /v1/nodes/{nodeId}/reservations/units`` shows it.

        Attributes:
            alloc_class (str): vfio-group, device-request, host, mig, ...
            gpu_model_id (str):
            id (str): IOMMU group's PCI address, e.g. 0000:04:00.0
            reservable (bool):
            sellable_gpus (int):
            state (str): known values: free, claimed; a newer API may send others
            claimed_by (str | Unset): vm:<id> or pod:<id>
            gpu_model_name (str | Unset):
            held_for (str | Unset): vm:<id> or pod:<id>: the waiting workload a take-back holds the unit for while the spot
                workload claiming it stops; nothing else may be placed on it
            not_reservable_reason (str | Unset):
            promised_min_run_seconds (int | Unset): released units only: the minimum run a spot workload placed on it now
                would be promised (its reservation's lending policy; 0 without one)
            promised_notice_seconds (int | Unset): released units only: the notice a spot workload placed on it now would be
                promised (its reservation's lending policy; 0 without one)
            released (bool | Unset):
            reservation_id (str | Unset):
     """

    alloc_class: str
    gpu_model_id: str
    id: str
    reservable: bool
    sellable_gpus: int
    state: str
    claimed_by: str | Unset = UNSET
    gpu_model_name: str | Unset = UNSET
    held_for: str | Unset = UNSET
    not_reservable_reason: str | Unset = UNSET
    promised_min_run_seconds: int | Unset = UNSET
    promised_notice_seconds: int | Unset = UNSET
    released: bool | Unset = UNSET
    reservation_id: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        alloc_class = self.alloc_class

        gpu_model_id = self.gpu_model_id

        id = self.id

        reservable = self.reservable

        sellable_gpus = self.sellable_gpus

        state = self.state

        claimed_by = self.claimed_by

        gpu_model_name = self.gpu_model_name

        held_for = self.held_for

        not_reservable_reason = self.not_reservable_reason

        promised_min_run_seconds = self.promised_min_run_seconds

        promised_notice_seconds = self.promised_notice_seconds

        released = self.released

        reservation_id = self.reservation_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "allocClass": alloc_class,
            "gpuModelId": gpu_model_id,
            "id": id,
            "reservable": reservable,
            "sellableGpus": sellable_gpus,
            "state": state,
        })
        if claimed_by is not UNSET:
            field_dict["claimedBy"] = claimed_by
        if gpu_model_name is not UNSET:
            field_dict["gpuModelName"] = gpu_model_name
        if held_for is not UNSET:
            field_dict["heldFor"] = held_for
        if not_reservable_reason is not UNSET:
            field_dict["notReservableReason"] = not_reservable_reason
        if promised_min_run_seconds is not UNSET:
            field_dict["promisedMinRunSeconds"] = promised_min_run_seconds
        if promised_notice_seconds is not UNSET:
            field_dict["promisedNoticeSeconds"] = promised_notice_seconds
        if released is not UNSET:
            field_dict["released"] = released
        if reservation_id is not UNSET:
            field_dict["reservationId"] = reservation_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        alloc_class = d.pop("allocClass")

        gpu_model_id = d.pop("gpuModelId")

        id = d.pop("id")

        reservable = d.pop("reservable")

        sellable_gpus = d.pop("sellableGpus")

        state = d.pop("state")

        claimed_by = d.pop("claimedBy", UNSET)

        gpu_model_name = d.pop("gpuModelName", UNSET)

        held_for = d.pop("heldFor", UNSET)

        not_reservable_reason = d.pop("notReservableReason", UNSET)

        promised_min_run_seconds = d.pop("promisedMinRunSeconds", UNSET)

        promised_notice_seconds = d.pop("promisedNoticeSeconds", UNSET)

        released = d.pop("released", UNSET)

        reservation_id = d.pop("reservationId", UNSET)

        unit = cls(
            alloc_class=alloc_class,
            gpu_model_id=gpu_model_id,
            id=id,
            reservable=reservable,
            sellable_gpus=sellable_gpus,
            state=state,
            claimed_by=claimed_by,
            gpu_model_name=gpu_model_name,
            held_for=held_for,
            not_reservable_reason=not_reservable_reason,
            promised_min_run_seconds=promised_min_run_seconds,
            promised_notice_seconds=promised_notice_seconds,
            released=released,
            reservation_id=reservation_id,
        )


        unit.additional_properties = d
        return unit

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

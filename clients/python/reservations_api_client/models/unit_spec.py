from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="UnitSpec")



@_attrs_define
class UnitSpec:
    """ One unit as the node reports it (the fleet file's unit object).

        Attributes:
            alloc_class (str):
            gpu_model_id (str):
            id (str):
            sellable (bool):
            sellable_gpus (int):
            gpu_model_name (None | str | Unset):
            not_sellable_reason (None | str | Unset):
     """

    alloc_class: str
    gpu_model_id: str
    id: str
    sellable: bool
    sellable_gpus: int
    gpu_model_name: None | str | Unset = UNSET
    not_sellable_reason: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        alloc_class = self.alloc_class

        gpu_model_id = self.gpu_model_id

        id = self.id

        sellable = self.sellable

        sellable_gpus = self.sellable_gpus

        gpu_model_name: None | str | Unset
        if isinstance(self.gpu_model_name, Unset):
            gpu_model_name = UNSET
        else:
            gpu_model_name = self.gpu_model_name

        not_sellable_reason: None | str | Unset
        if isinstance(self.not_sellable_reason, Unset):
            not_sellable_reason = UNSET
        else:
            not_sellable_reason = self.not_sellable_reason


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "allocClass": alloc_class,
            "gpuModelId": gpu_model_id,
            "id": id,
            "sellable": sellable,
            "sellableGpus": sellable_gpus,
        })
        if gpu_model_name is not UNSET:
            field_dict["gpuModelName"] = gpu_model_name
        if not_sellable_reason is not UNSET:
            field_dict["notSellableReason"] = not_sellable_reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        alloc_class = d.pop("allocClass")

        gpu_model_id = d.pop("gpuModelId")

        id = d.pop("id")

        sellable = d.pop("sellable")

        sellable_gpus = d.pop("sellableGpus")

        def _parse_gpu_model_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        gpu_model_name = _parse_gpu_model_name(d.pop("gpuModelName", UNSET))


        def _parse_not_sellable_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        not_sellable_reason = _parse_not_sellable_reason(d.pop("notSellableReason", UNSET))


        unit_spec = cls(
            alloc_class=alloc_class,
            gpu_model_id=gpu_model_id,
            id=id,
            sellable=sellable,
            sellable_gpus=sellable_gpus,
            gpu_model_name=gpu_model_name,
            not_sellable_reason=not_sellable_reason,
        )

        return unit_spec


from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="UsageFigures")



@_attrs_define
class UsageFigures:
    """ integer milliseconds by state: a node's row has all eight, a reservation's only review, reclaiming, lent_used,
    lent_idle, reserved_used, reserved_idle

        Attributes:
            lent_idle (int | Unset):
            lent_used (int | Unset):
            open_idle (int | Unset):
            open_used (int | Unset):
            reclaiming (int | Unset):
            reserved_idle (int | Unset):
            reserved_used (int | Unset):
            review (int | Unset):
     """

    lent_idle: int | Unset = UNSET
    lent_used: int | Unset = UNSET
    open_idle: int | Unset = UNSET
    open_used: int | Unset = UNSET
    reclaiming: int | Unset = UNSET
    reserved_idle: int | Unset = UNSET
    reserved_used: int | Unset = UNSET
    review: int | Unset = UNSET
    additional_properties: dict[str, int] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        lent_idle = self.lent_idle

        lent_used = self.lent_used

        open_idle = self.open_idle

        open_used = self.open_used

        reclaiming = self.reclaiming

        reserved_idle = self.reserved_idle

        reserved_used = self.reserved_used

        review = self.review


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
        })
        if lent_idle is not UNSET:
            field_dict["lent_idle"] = lent_idle
        if lent_used is not UNSET:
            field_dict["lent_used"] = lent_used
        if open_idle is not UNSET:
            field_dict["open_idle"] = open_idle
        if open_used is not UNSET:
            field_dict["open_used"] = open_used
        if reclaiming is not UNSET:
            field_dict["reclaiming"] = reclaiming
        if reserved_idle is not UNSET:
            field_dict["reserved_idle"] = reserved_idle
        if reserved_used is not UNSET:
            field_dict["reserved_used"] = reserved_used
        if review is not UNSET:
            field_dict["review"] = review

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        lent_idle = d.pop("lent_idle", UNSET)

        lent_used = d.pop("lent_used", UNSET)

        open_idle = d.pop("open_idle", UNSET)

        open_used = d.pop("open_used", UNSET)

        reclaiming = d.pop("reclaiming", UNSET)

        reserved_idle = d.pop("reserved_idle", UNSET)

        reserved_used = d.pop("reserved_used", UNSET)

        review = d.pop("review", UNSET)

        usage_figures = cls(
            lent_idle=lent_idle,
            lent_used=lent_used,
            open_idle=open_idle,
            open_used=open_used,
            reclaiming=reclaiming,
            reserved_idle=reserved_idle,
            reserved_used=reserved_used,
            review=review,
        )


        usage_figures.additional_properties = d
        return usage_figures

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> int:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: int) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties

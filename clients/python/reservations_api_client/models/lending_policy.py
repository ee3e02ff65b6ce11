from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="LendingPolicy")



@_attrs_define
class LendingPolicy:
    """ A reservation's lending policy, every field given (the defaults filled in).

        Attributes:
            auto (bool): idle units are lent, and kept lent, by the service
            idle_seconds (int): how long a unit stays idle before it is lent
            keep_unlent (int): never lends a unit if fewer than this many of the reservation's units would stay unreleased
            min_run_seconds (int): the minimum run promised to them: no reclaim stops one sooner
            notice_seconds (int): the notice promised to every spot workload placed on its lent units
            relend_after_seconds (int): the wait before a unit taken back is lent again (doubled for each take-back within
                an hour of its last lending, up to an hour)
     """

    auto: bool
    idle_seconds: int
    keep_unlent: int
    min_run_seconds: int
    notice_seconds: int
    relend_after_seconds: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        auto = self.auto

        idle_seconds = self.idle_seconds

        keep_unlent = self.keep_unlent

        min_run_seconds = self.min_run_seconds

        notice_seconds = self.notice_seconds

        relend_after_seconds = self.relend_after_seconds


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "auto": auto,
            "idleSeconds": idle_seconds,
            "keepUnlent": keep_unlent,
            "minRunSeconds": min_run_seconds,
            "noticeSeconds": notice_seconds,
            "relendAfterSeconds": relend_after_seconds,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        auto = d.pop("auto")

        idle_seconds = d.pop("idleSeconds")

        keep_unlent = d.pop("keepUnlent")

        min_run_seconds = d.pop("minRunSeconds")

        notice_seconds = d.pop("noticeSeconds")

        relend_after_seconds = d.pop("relendAfterSeconds")

        lending_policy = cls(
            auto=auto,
            idle_seconds=idle_seconds,
            keep_unlent=keep_unlent,
            min_run_seconds=min_run_seconds,
            notice_seconds=notice_seconds,
            relend_after_seconds=relend_after_seconds,
        )


        lending_policy.additional_properties = d
        return lending_policy

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

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="LendingPolicyRequest")



@_attrs_define
class LendingPolicyRequest:
    """ The body of ``PUT .../lending``: the whole policy (an omitted field takes its
    default).

        Attributes:
            auto (bool): lend idle units, and keep them lent, by itself
            idle_seconds (int | Unset): how long a unit stays idle before it is lent Default: 900.
            keep_unlent (int | Unset): never lend a unit if fewer than this many of the reservation's units would stay
                unreleased (busy or not) Default: 0.
            min_run_seconds (int | Unset): the minimum run promised to them: no reclaim stops one sooner Default: 0.
            notice_seconds (int | Unset): the notice promised to every spot workload placed on its lent units Default: 0.
            relend_after_seconds (int | Unset): after a unit is taken back, how long before it is lent again Default: 300.
     """

    auto: bool
    idle_seconds: int | Unset = 900
    keep_unlent: int | Unset = 0
    min_run_seconds: int | Unset = 0
    notice_seconds: int | Unset = 0
    relend_after_seconds: int | Unset = 300





    def to_dict(self) -> dict[str, Any]:
        auto = self.auto

        idle_seconds = self.idle_seconds

        keep_unlent = self.keep_unlent

        min_run_seconds = self.min_run_seconds

        notice_seconds = self.notice_seconds

        relend_after_seconds = self.relend_after_seconds


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "auto": auto,
        })
        if idle_seconds is not UNSET:
            field_dict["idleSeconds"] = idle_seconds
        if keep_unlent is not UNSET:
            field_dict["keepUnlent"] = keep_unlent
        if min_run_seconds is not UNSET:
            field_dict["minRunSeconds"] = min_run_seconds
        if notice_seconds is not UNSET:
            field_dict["noticeSeconds"] = notice_seconds
        if relend_after_seconds is not UNSET:
            field_dict["relendAfterSeconds"] = relend_after_seconds

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        auto = d.pop("auto")

        idle_seconds = d.pop("idleSeconds", UNSET)

        keep_unlent = d.pop("keepUnlent", UNSET)

        min_run_seconds = d.pop("minRunSeconds", UNSET)

        notice_seconds = d.pop("noticeSeconds", UNSET)

        relend_after_seconds = d.pop("relendAfterSeconds", UNSET)

        lending_policy_request = cls(
            auto=auto,
            idle_seconds=idle_seconds,
            keep_unlent=keep_unlent,
            min_run_seconds=min_run_seconds,
            notice_seconds=notice_seconds,
            relend_after_seconds=relend_after_seconds,
        )

        return lending_policy_request


from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ReclaimRequest")



@_attrs_define
class ReclaimRequest:
    """ The body of reclaim: release's, plus the notice its spot workloads get.

        Attributes:
            unit_ids (list[str]): PCI addresses dddd:bb:dd.f (hex, compared case-insensitively), no duplicates
            dry_run (bool | Unset):  Default: False.
            notice_seconds (int | Unset): seconds the spot workloads get before the node stops them (their terminateAt); the
                units leave releasedUnitIds at once Default: 0.
            reason (None | str | Unset):
     """

    unit_ids: list[str]
    dry_run: bool | Unset = False
    notice_seconds: int | Unset = 0
    reason: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        unit_ids = self.unit_ids



        dry_run = self.dry_run

        notice_seconds = self.notice_seconds

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "unitIds": unit_ids,
        })
        if dry_run is not UNSET:
            field_dict["dryRun"] = dry_run
        if notice_seconds is not UNSET:
            field_dict["noticeSeconds"] = notice_seconds
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        unit_ids = cast(list[str], d.pop("unitIds"))


        dry_run = d.pop("dryRun", UNSET)

        notice_seconds = d.pop("noticeSeconds", UNSET)

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        reclaim_request = cls(
            unit_ids=unit_ids,
            dry_run=dry_run,
            notice_seconds=notice_seconds,
            reason=reason,
        )

        return reclaim_request


from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="UnitsRequest")



@_attrs_define
class UnitsRequest:
    """ The body of release and reclaim: which units, a dry run or not, why.

        Attributes:
            unit_ids (list[str]): PCI addresses dddd:bb:dd.f (hex, compared case-insensitively), no duplicates
            dry_run (bool | Unset):  Default: False.
            reason (None | str | Unset):
     """

    unit_ids: list[str]
    dry_run: bool | Unset = False
    reason: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        unit_ids = self.unit_ids



        dry_run = self.dry_run

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
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        unit_ids = cast(list[str], d.pop("unitIds"))


        dry_run = d.pop("dryRun", UNSET)

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        units_request = cls(
            unit_ids=unit_ids,
            dry_run=dry_run,
            reason=reason,
        )

        return units_request


from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="CreateReservationRequest")



@_attrs_define
class CreateReservationRequest:
    """ The body of a create: which units, for whom, who manages them, and the term.

        Attributes:
            allowed_org_ids (list[str]): the audience
            unit_ids (list[str]): PCI addresses of this node's reservable units, no duplicates
            contract_ref (None | str | Unset):
            ends_at (datetime.datetime | None | Unset): RFC 3339 with an offset, within the years 1970-9999 in UTC; at least
                1 second after startsAt (times are kept to the second) and in the future; absent: open-ended
            managing_org_ids (list[str] | Unset): may release and reclaim
            reason (None | str | Unset):
            starts_at (datetime.datetime | None | Unset): RFC 3339 with an offset, within the years 1970-9999 in UTC;
                default now; at most 5 minutes in the past
     """

    allowed_org_ids: list[str]
    unit_ids: list[str]
    contract_ref: None | str | Unset = UNSET
    ends_at: datetime.datetime | None | Unset = UNSET
    managing_org_ids: list[str] | Unset = UNSET
    reason: None | str | Unset = UNSET
    starts_at: datetime.datetime | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        allowed_org_ids = self.allowed_org_ids



        unit_ids = self.unit_ids



        contract_ref: None | str | Unset
        if isinstance(self.contract_ref, Unset):
            contract_ref = UNSET
        else:
            contract_ref = self.contract_ref

        ends_at: None | str | Unset
        if isinstance(self.ends_at, Unset):
            ends_at = UNSET
        elif isinstance(self.ends_at, datetime.datetime):
            ends_at = self.ends_at.isoformat()
        else:
            ends_at = self.ends_at

        managing_org_ids: list[str] | Unset = UNSET
        if not isinstance(self.managing_org_ids, Unset):
            managing_org_ids = self.managing_org_ids



        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason

        starts_at: None | str | Unset
        if isinstance(self.starts_at, Unset):
            starts_at = UNSET
        elif isinstance(self.starts_at, datetime.datetime):
            starts_at = self.starts_at.isoformat()
        else:
            starts_at = self.starts_at


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "allowedOrgIds": allowed_org_ids,
            "unitIds": unit_ids,
        })
        if contract_ref is not UNSET:
            field_dict["contractRef"] = contract_ref
        if ends_at is not UNSET:
            field_dict["endsAt"] = ends_at
        if managing_org_ids is not UNSET:
            field_dict["managingOrgIds"] = managing_org_ids
        if reason is not UNSET:
            field_dict["reason"] = reason
        if starts_at is not UNSET:
            field_dict["startsAt"] = starts_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        allowed_org_ids = cast(list[str], d.pop("allowedOrgIds"))


        unit_ids = cast(list[str], d.pop("unitIds"))


        def _parse_contract_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        contract_ref = _parse_contract_ref(d.pop("contractRef", UNSET))


        def _parse_ends_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                ends_at_type_0 = datetime.datetime.fromisoformat(data)



                return ends_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        ends_at = _parse_ends_at(d.pop("endsAt", UNSET))


        managing_org_ids = cast(list[str], d.pop("managingOrgIds", UNSET))


        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        def _parse_starts_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                starts_at_type_0 = datetime.datetime.fromisoformat(data)



                return starts_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        starts_at = _parse_starts_at(d.pop("startsAt", UNSET))


        create_reservation_request = cls(
            allowed_org_ids=allowed_org_ids,
            unit_ids=unit_ids,
            contract_ref=contract_ref,
            ends_at=ends_at,
            managing_org_ids=managing_org_ids,
            reason=reason,
            starts_at=starts_at,
        )

        return create_reservation_request


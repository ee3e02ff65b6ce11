from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="UpdateReservationRequest")



@_attrs_define
class UpdateReservationRequest:
    """ The body of a PATCH: a JSON object of changes, at least one, each optional. An absent
    field changes nothing; ``null`` (where allowed) removes the value.

        Attributes:
            add_unit_ids (list[str] | Unset): reservable units of this node the reservation does not hold, free over its
                term
            allowed_org_ids (list[str] | Unset): the whole new audience
            contract_ref (None | str | Unset): null removes it
            ends_at (datetime.datetime | None | Unset): RFC 3339 with an offset; after now and at least 1 second after
                startsAt; null: open-ended. Extending must not overlap another live reservation of its units
            managing_org_ids (list[str] | Unset): the whole new list of managers
            reason (None | str | Unset): the reservation's stored reason, and the event's; null removes it
            remove_unit_ids (list[str] | Unset): units of the reservation; at least one must remain (a removed unit leaves
                releasedUnitIds too; nothing on it is terminated)
            starts_at (datetime.datetime | Unset): only while pending; RFC 3339 with an offset, at most 5 minutes in the
                past
     """

    add_unit_ids: list[str] | Unset = UNSET
    allowed_org_ids: list[str] | Unset = UNSET
    contract_ref: None | str | Unset = UNSET
    ends_at: datetime.datetime | None | Unset = UNSET
    managing_org_ids: list[str] | Unset = UNSET
    reason: None | str | Unset = UNSET
    remove_unit_ids: list[str] | Unset = UNSET
    starts_at: datetime.datetime | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        add_unit_ids: list[str] | Unset = UNSET
        if not isinstance(self.add_unit_ids, Unset):
            add_unit_ids = self.add_unit_ids



        allowed_org_ids: list[str] | Unset = UNSET
        if not isinstance(self.allowed_org_ids, Unset):
            allowed_org_ids = self.allowed_org_ids



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

        remove_unit_ids: list[str] | Unset = UNSET
        if not isinstance(self.remove_unit_ids, Unset):
            remove_unit_ids = self.remove_unit_ids



        starts_at: str | Unset = UNSET
        if not isinstance(self.starts_at, Unset):
            starts_at = self.starts_at.isoformat()


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if add_unit_ids is not UNSET:
            field_dict["addUnitIds"] = add_unit_ids
        if allowed_org_ids is not UNSET:
            field_dict["allowedOrgIds"] = allowed_org_ids
        if contract_ref is not UNSET:
            field_dict["contractRef"] = contract_ref
        if ends_at is not UNSET:
            field_dict["endsAt"] = ends_at
        if managing_org_ids is not UNSET:
            field_dict["managingOrgIds"] = managing_org_ids
        if reason is not UNSET:
            field_dict["reason"] = reason
        if remove_unit_ids is not UNSET:
            field_dict["removeUnitIds"] = remove_unit_ids
        if starts_at is not UNSET:
            field_dict["startsAt"] = starts_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        add_unit_ids = cast(list[str], d.pop("addUnitIds", UNSET))


        allowed_org_ids = cast(list[str], d.pop("allowedOrgIds", UNSET))


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


        remove_unit_ids = cast(list[str], d.pop("removeUnitIds", UNSET))


        _starts_at = d.pop("startsAt", UNSET)
        starts_at: datetime.datetime | Unset
        if isinstance(_starts_at,  Unset):
            starts_at = UNSET
        else:
            starts_at = datetime.datetime.fromisoformat(_starts_at)




        update_reservation_request = cls(
            add_unit_ids=add_unit_ids,
            allowed_org_ids=allowed_org_ids,
            contract_ref=contract_ref,
            ends_at=ends_at,
            managing_org_ids=managing_org_ids,
            reason=reason,
            remove_unit_ids=remove_unit_ids,
            starts_at=starts_at,
        )

        return update_reservation_request


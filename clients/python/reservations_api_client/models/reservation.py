from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.lending_policy import LendingPolicy





T = TypeVar("T", bound="Reservation")



@_attrs_define
class Reservation:
    """ A reservation as the API shows it (effective status, sorted unit ids).

        Attributes:
            allowed_org_ids (list[str]):
            created_at (datetime.datetime):
            etag (str): the reservation's version tag: its ETag header without the quotes; changes whenever anything else
                here does (its effective status too), and only then
            id (str):
            managing_org_ids (list[str]):
            node_id (str):
            released_unit_ids (list[str]):
            reserved_unit_ids (list[str]):
            starts_at (datetime.datetime):
            status (str): known values: pending, active, expired, cancelled, needs-review; a newer API may send others
            updated_at (datetime.datetime):
            contract_ref (str | Unset):
            ends_at (datetime.datetime | Unset):
            lending (LendingPolicy | None | Unset): its lending policy (PUT .../lending), null when it has none
            reason (str | Unset):
            topology_gen (int | Unset):
     """

    allowed_org_ids: list[str]
    created_at: datetime.datetime
    etag: str
    id: str
    managing_org_ids: list[str]
    node_id: str
    released_unit_ids: list[str]
    reserved_unit_ids: list[str]
    starts_at: datetime.datetime
    status: str
    updated_at: datetime.datetime
    contract_ref: str | Unset = UNSET
    ends_at: datetime.datetime | Unset = UNSET
    lending: LendingPolicy | None | Unset = UNSET
    reason: str | Unset = UNSET
    topology_gen: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.lending_policy import LendingPolicy # noqa: PLC0415
        allowed_org_ids = self.allowed_org_ids



        created_at = self.created_at.isoformat()

        etag = self.etag

        id = self.id

        managing_org_ids = self.managing_org_ids



        node_id = self.node_id

        released_unit_ids = self.released_unit_ids



        reserved_unit_ids = self.reserved_unit_ids



        starts_at = self.starts_at.isoformat()

        status = self.status

        updated_at = self.updated_at.isoformat()

        contract_ref = self.contract_ref

        ends_at: str | Unset = UNSET
        if not isinstance(self.ends_at, Unset):
            ends_at = self.ends_at.isoformat()

        lending: dict[str, Any] | None | Unset
        if isinstance(self.lending, Unset):
            lending = UNSET
        elif isinstance(self.lending, LendingPolicy):
            lending = self.lending.to_dict()
        else:
            lending = self.lending

        reason = self.reason

        topology_gen = self.topology_gen


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "allowedOrgIds": allowed_org_ids,
            "createdAt": created_at,
            "etag": etag,
            "id": id,
            "managingOrgIds": managing_org_ids,
            "nodeId": node_id,
            "releasedUnitIds": released_unit_ids,
            "reservedUnitIds": reserved_unit_ids,
            "startsAt": starts_at,
            "status": status,
            "updatedAt": updated_at,
        })
        if contract_ref is not UNSET:
            field_dict["contractRef"] = contract_ref
        if ends_at is not UNSET:
            field_dict["endsAt"] = ends_at
        if lending is not UNSET:
            field_dict["lending"] = lending
        if reason is not UNSET:
            field_dict["reason"] = reason
        if topology_gen is not UNSET:
            field_dict["topologyGen"] = topology_gen

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lending_policy import LendingPolicy # noqa: PLC0415
        d = dict(src_dict)
        allowed_org_ids = cast(list[str], d.pop("allowedOrgIds"))


        created_at = datetime.datetime.fromisoformat(d.pop("createdAt"))




        etag = d.pop("etag")

        id = d.pop("id")

        managing_org_ids = cast(list[str], d.pop("managingOrgIds"))


        node_id = d.pop("nodeId")

        released_unit_ids = cast(list[str], d.pop("releasedUnitIds"))


        reserved_unit_ids = cast(list[str], d.pop("reservedUnitIds"))


        starts_at = datetime.datetime.fromisoformat(d.pop("startsAt"))




        status = d.pop("status")

        updated_at = datetime.datetime.fromisoformat(d.pop("updatedAt"))




        contract_ref = d.pop("contractRef", UNSET)

        _ends_at = d.pop("endsAt", UNSET)
        ends_at: datetime.datetime | Unset
        if isinstance(_ends_at,  Unset):
            ends_at = UNSET
        else:
            ends_at = datetime.datetime.fromisoformat(_ends_at)




        def _parse_lending(data: object) -> LendingPolicy | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                lending_type_0 = LendingPolicy.from_dict(data)



                return lending_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LendingPolicy | None | Unset, data)

        lending = _parse_lending(d.pop("lending", UNSET))


        reason = d.pop("reason", UNSET)

        topology_gen = d.pop("topologyGen", UNSET)

        reservation = cls(
            allowed_org_ids=allowed_org_ids,
            created_at=created_at,
            etag=etag,
            id=id,
            managing_org_ids=managing_org_ids,
            node_id=node_id,
            released_unit_ids=released_unit_ids,
            reserved_unit_ids=reserved_unit_ids,
            starts_at=starts_at,
            status=status,
            updated_at=updated_at,
            contract_ref=contract_ref,
            ends_at=ends_at,
            lending=lending,
            reason=reason,
            topology_gen=topology_gen,
        )


        reservation.additional_properties = d
        return reservation

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

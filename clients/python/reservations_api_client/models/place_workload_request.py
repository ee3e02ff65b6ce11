from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="PlaceWorkloadRequest")



@_attrs_define
class PlaceWorkloadRequest:
    """ The body of place: the scheduler's workload, whose org, at which tier, on which units
    (``unitIds``), or, as the audience's work on a reservation (``reservationId``), on
    ``count`` of its units the service chooses, taking lent ones back.

        Attributes:
            id (str): the workload's id, unique on the node
            kind (str): known values: vm, pod; a newer API may send others
            org_id (str):
            tier (str): known values: spot, reserved, on-demand; a newer API may send others
            count (int | Unset): only with reservationId, instead of unitIds: how many of its units, chosen by the service
                (free ones first, then lent ones taken back)
            reservation_id (str | Unset): the audience's work on this reservation (tier must be reserved): units it has lent
                are taken back in the same write
            unit_ids (list[str] | Unset): units of this node, PCI addresses (compared case-insensitively); at most 16 with
                reservationId. Exactly one of unitIds and count
     """

    id: str
    kind: str
    org_id: str
    tier: str
    count: int | Unset = UNSET
    reservation_id: str | Unset = UNSET
    unit_ids: list[str] | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        kind = self.kind

        org_id = self.org_id

        tier = self.tier

        count = self.count

        reservation_id = self.reservation_id

        unit_ids: list[str] | Unset = UNSET
        if not isinstance(self.unit_ids, Unset):
            unit_ids = self.unit_ids




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "kind": kind,
            "orgId": org_id,
            "tier": tier,
        })
        if count is not UNSET:
            field_dict["count"] = count
        if reservation_id is not UNSET:
            field_dict["reservationId"] = reservation_id
        if unit_ids is not UNSET:
            field_dict["unitIds"] = unit_ids

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        kind = d.pop("kind")

        org_id = d.pop("orgId")

        tier = d.pop("tier")

        count = d.pop("count", UNSET)

        reservation_id = d.pop("reservationId", UNSET)

        unit_ids = cast(list[str], d.pop("unitIds", UNSET))


        place_workload_request = cls(
            id=id,
            kind=kind,
            org_id=org_id,
            tier=tier,
            count=count,
            reservation_id=reservation_id,
            unit_ids=unit_ids,
        )

        return place_workload_request


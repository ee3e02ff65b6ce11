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
  from ..models.usage_figures import UsageFigures





T = TypeVar("T", bound="UsageRow")



@_attrs_define
class UsageRow:
    """ One key's usage over one whole UTC period, counted up to the earlier of ``end`` and
    ``asOf``: final once ``end`` is at or before ``asOf``. Billing takes the latest
    ``revision`` of each ``id``.

        Attributes:
            as_of (datetime.datetime): every change before it is counted
            end (datetime.datetime):
            final (bool):
            gpu_ms (UsageFigures): integer milliseconds by state: a node's row has all eight, a reservation's only review,
                reclaiming, lent_used, lent_idle, reserved_used, reserved_idle
            id (str): stable: the key, the granularity and the period's start
            node_id (str):
            revision (int): 1, and one more each time a change that arrived after the row was final altered its figures
            start (datetime.datetime):
            unit_ms (UsageFigures): integer milliseconds by state: a node's row has all eight, a reservation's only review,
                reclaiming, lent_used, lent_idle, reserved_used, reserved_idle
            reservation_id (str | Unset): groupBy=reservation only
     """

    as_of: datetime.datetime
    end: datetime.datetime
    final: bool
    gpu_ms: UsageFigures
    id: str
    node_id: str
    revision: int
    start: datetime.datetime
    unit_ms: UsageFigures
    reservation_id: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.usage_figures import UsageFigures # noqa: PLC0415
        as_of = self.as_of.isoformat()

        end = self.end.isoformat()

        final = self.final

        gpu_ms = self.gpu_ms.to_dict()

        id = self.id

        node_id = self.node_id

        revision = self.revision

        start = self.start.isoformat()

        unit_ms = self.unit_ms.to_dict()

        reservation_id = self.reservation_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "asOf": as_of,
            "end": end,
            "final": final,
            "gpuMs": gpu_ms,
            "id": id,
            "nodeId": node_id,
            "revision": revision,
            "start": start,
            "unitMs": unit_ms,
        })
        if reservation_id is not UNSET:
            field_dict["reservationId"] = reservation_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.usage_figures import UsageFigures # noqa: PLC0415
        d = dict(src_dict)
        as_of = datetime.datetime.fromisoformat(d.pop("asOf"))




        end = datetime.datetime.fromisoformat(d.pop("end"))




        final = d.pop("final")

        gpu_ms = UsageFigures.from_dict(d.pop("gpuMs"))




        id = d.pop("id")

        node_id = d.pop("nodeId")

        revision = d.pop("revision")

        start = datetime.datetime.fromisoformat(d.pop("start"))




        unit_ms = UsageFigures.from_dict(d.pop("unitMs"))




        reservation_id = d.pop("reservationId", UNSET)

        usage_row = cls(
            as_of=as_of,
            end=end,
            final=final,
            gpu_ms=gpu_ms,
            id=id,
            node_id=node_id,
            revision=revision,
            start=start,
            unit_ms=unit_ms,
            reservation_id=reservation_id,
        )


        usage_row.additional_properties = d
        return usage_row

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

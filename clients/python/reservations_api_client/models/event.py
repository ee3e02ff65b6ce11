from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime

if TYPE_CHECKING:
  from ..models.event_data import EventData





T = TypeVar("T", bound="Event")



@_attrs_define
class Event:
    """ One event as the feeds answer it (CloudEvents 1.0, JSON format).

        Attributes:
            data (EventData): what happened; actor {orgId, keyId (operator and node owner only)} when a key made the change
            datacontenttype (str): known values: application/json; a newer API may send others
            id (str): evt-...; subscribers deduplicate by it
            source (str): /v1/nodes/<nodeId>
            specversion (str): known values: 1.0; a newer API may send others
            subject (str): reservations/<id>, workloads/<id> or nodes/<id>
            time (datetime.datetime): RFC 3339 UTC, to the millisecond
            type_ (str): known values: reservation.created, reservation.released, reservation.reclaimed,
                reservation.cancelled, reservation.reaffirmed, reservation.needs_review, reservation.updated,
                reservation.activated, reservation.expiring, reservation.expired, workload.placed, workload.ended,
                workload.started, workload.termination_requested, workload.terminated, workload.termination_stuck,
                node.registered, node.updated; a newer API may send others
     """

    data: EventData
    datacontenttype: str
    id: str
    source: str
    specversion: str
    subject: str
    time: datetime.datetime
    type_: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.event_data import EventData # noqa: PLC0415
        data = self.data.to_dict()

        datacontenttype = self.datacontenttype

        id = self.id

        source = self.source

        specversion = self.specversion

        subject = self.subject

        time = self.time.isoformat()

        type_ = self.type_


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "data": data,
            "datacontenttype": datacontenttype,
            "id": id,
            "source": source,
            "specversion": specversion,
            "subject": subject,
            "time": time,
            "type": type_,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_data import EventData # noqa: PLC0415
        d = dict(src_dict)
        data = EventData.from_dict(d.pop("data"))




        datacontenttype = d.pop("datacontenttype")

        id = d.pop("id")

        source = d.pop("source")

        specversion = d.pop("specversion")

        subject = d.pop("subject")

        time = datetime.datetime.fromisoformat(d.pop("time"))




        type_ = d.pop("type")

        event = cls(
            data=data,
            datacontenttype=datacontenttype,
            id=id,
            source=source,
            specversion=specversion,
            subject=subject,
            time=time,
            type_=type_,
        )


        event.additional_properties = d
        return event

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

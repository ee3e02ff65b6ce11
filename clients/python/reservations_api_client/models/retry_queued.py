from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast
import datetime






T = TypeVar("T", bound="RetryQueued")



@_attrs_define
class RetryQueued:
    """ A retry by hand, queued: the attempt it will be (sent within seconds).

        Attributes:
            attempt (int):
            event_id (str):
            queued_at (datetime.datetime):
     """

    attempt: int
    event_id: str
    queued_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        event_id = self.event_id

        queued_at = self.queued_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attempt": attempt,
            "eventId": event_id,
            "queuedAt": queued_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        event_id = d.pop("eventId")

        queued_at = datetime.datetime.fromisoformat(d.pop("queuedAt"))




        retry_queued = cls(
            attempt=attempt,
            event_id=event_id,
            queued_at=queued_at,
        )


        retry_queued.additional_properties = d
        return retry_queued

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

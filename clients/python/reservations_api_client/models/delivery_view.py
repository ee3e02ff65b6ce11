from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.delivery_state import check_delivery_state
from ..models.delivery_state import DeliveryState
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="DeliveryView")



@_attrs_define
class DeliveryView:
    """ One attempt in ``GET /v1/webhooks/{id}/deliveries`` (absent rather than null).

        Attributes:
            at (str):
            attempt (int):
            event_id (str):
            state (DeliveryState):
            type_ (str):
            error (str | Unset):
            next_attempt_at (str | Unset):
            status (int | Unset): The HTTP status; absent when none came back
     """

    at: str
    attempt: int
    event_id: str
    state: DeliveryState
    type_: str
    error: str | Unset = UNSET
    next_attempt_at: str | Unset = UNSET
    status: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at = self.at

        attempt = self.attempt

        event_id = self.event_id

        state: str = self.state

        type_ = self.type_

        error = self.error

        next_attempt_at = self.next_attempt_at

        status = self.status


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "at": at,
            "attempt": attempt,
            "eventId": event_id,
            "state": state,
            "type": type_,
        })
        if error is not UNSET:
            field_dict["error"] = error
        if next_attempt_at is not UNSET:
            field_dict["nextAttemptAt"] = next_attempt_at
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = d.pop("at")

        attempt = d.pop("attempt")

        event_id = d.pop("eventId")

        state = check_delivery_state(d.pop("state"))




        type_ = d.pop("type")

        error = d.pop("error", UNSET)

        next_attempt_at = d.pop("nextAttemptAt", UNSET)

        status = d.pop("status", UNSET)

        delivery_view = cls(
            at=at,
            attempt=attempt,
            event_id=event_id,
            state=state,
            type_=type_,
            error=error,
            next_attempt_at=next_attempt_at,
            status=status,
        )


        delivery_view.additional_properties = d
        return delivery_view

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

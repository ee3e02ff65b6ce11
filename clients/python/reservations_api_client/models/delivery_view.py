from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="DeliveryView")



@_attrs_define
class DeliveryView:
    """ One attempt in ``GET /v1/webhooks/{id}/deliveries`` (absent rather than null).

        Attributes:
            at (datetime.datetime):
            attempt (int):
            event_id (str):
            state (str): known values: pending, delivered, failed; a newer API may send others
            type_ (str): known values: reservation.created, reservation.released, reservation.reclaimed,
                reservation.cancelled, reservation.reaffirmed, reservation.needs_review, reservation.updated,
                reservation.activated, reservation.expiring, reservation.expired, workload.placed, workload.ended,
                workload.started, workload.termination_requested, workload.terminated, workload.termination_stuck,
                node.registered, node.updated; a newer API may send others
            error (str | Unset):
            next_attempt_at (datetime.datetime | Unset):
            status (int | Unset): The HTTP status; absent when none came back
     """

    at: datetime.datetime
    attempt: int
    event_id: str
    state: str
    type_: str
    error: str | Unset = UNSET
    next_attempt_at: datetime.datetime | Unset = UNSET
    status: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        at = self.at.isoformat()

        attempt = self.attempt

        event_id = self.event_id

        state = self.state

        type_ = self.type_

        error = self.error

        next_attempt_at: str | Unset = UNSET
        if not isinstance(self.next_attempt_at, Unset):
            next_attempt_at = self.next_attempt_at.isoformat()

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
        at = datetime.datetime.fromisoformat(d.pop("at"))




        attempt = d.pop("attempt")

        event_id = d.pop("eventId")

        state = d.pop("state")

        type_ = d.pop("type")

        error = d.pop("error", UNSET)

        _next_attempt_at = d.pop("nextAttemptAt", UNSET)
        next_attempt_at: datetime.datetime | Unset
        if isinstance(_next_attempt_at,  Unset):
            next_attempt_at = UNSET
        else:
            next_attempt_at = datetime.datetime.fromisoformat(_next_attempt_at)




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

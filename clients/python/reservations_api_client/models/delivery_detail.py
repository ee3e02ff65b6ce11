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
  from ..models.delivery_view import DeliveryView





T = TypeVar("T", bound="DeliveryDetail")



@_attrs_define
class DeliveryDetail:
    """ ``GET /v1/webhooks/{id}/deliveries/{eventId}``: one event's delivery, where it stands
    and every attempt made of it, newest first, each as the listing shows it.

        Attributes:
            attempt_count (int): How many attempts were made
            attempts (list[DeliveryView]): Every attempt made, newest first
            event_id (str):
            state (str): known values: pending, delivered, failed; a newer API may send others
            subscription_id (str):
            type_ (str): known values: reservation.created, reservation.released, reservation.reclaimed,
                reservation.cancelled, reservation.reaffirmed, reservation.needs_review, reservation.updated,
                reservation.activated, reservation.expiring, reservation.expired, workload.placed, workload.ended,
                workload.started, workload.termination_requested, workload.terminated, workload.termination_stuck,
                node.registered, node.updated; a newer API may send others
            last_attempt_at (datetime.datetime | Unset): Absent before the first
            next_attempt_at (datetime.datetime | Unset): When the next attempt is due; absent unless pending and scheduled
     """

    attempt_count: int
    attempts: list[DeliveryView]
    event_id: str
    state: str
    subscription_id: str
    type_: str
    last_attempt_at: datetime.datetime | Unset = UNSET
    next_attempt_at: datetime.datetime | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.delivery_view import DeliveryView # noqa: PLC0415
        attempt_count = self.attempt_count

        attempts = []
        for attempts_item_data in self.attempts:
            attempts_item = attempts_item_data.to_dict()
            attempts.append(attempts_item)



        event_id = self.event_id

        state = self.state

        subscription_id = self.subscription_id

        type_ = self.type_

        last_attempt_at: str | Unset = UNSET
        if not isinstance(self.last_attempt_at, Unset):
            last_attempt_at = self.last_attempt_at.isoformat()

        next_attempt_at: str | Unset = UNSET
        if not isinstance(self.next_attempt_at, Unset):
            next_attempt_at = self.next_attempt_at.isoformat()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "attemptCount": attempt_count,
            "attempts": attempts,
            "eventId": event_id,
            "state": state,
            "subscriptionId": subscription_id,
            "type": type_,
        })
        if last_attempt_at is not UNSET:
            field_dict["lastAttemptAt"] = last_attempt_at
        if next_attempt_at is not UNSET:
            field_dict["nextAttemptAt"] = next_attempt_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.delivery_view import DeliveryView # noqa: PLC0415
        d = dict(src_dict)
        attempt_count = d.pop("attemptCount")

        attempts = []
        _attempts = d.pop("attempts")
        for attempts_item_data in (_attempts):
            attempts_item = DeliveryView.from_dict(attempts_item_data)



            attempts.append(attempts_item)


        event_id = d.pop("eventId")

        state = d.pop("state")

        subscription_id = d.pop("subscriptionId")

        type_ = d.pop("type")

        _last_attempt_at = d.pop("lastAttemptAt", UNSET)
        last_attempt_at: datetime.datetime | Unset
        if isinstance(_last_attempt_at,  Unset):
            last_attempt_at = UNSET
        else:
            last_attempt_at = datetime.datetime.fromisoformat(_last_attempt_at)




        _next_attempt_at = d.pop("nextAttemptAt", UNSET)
        next_attempt_at: datetime.datetime | Unset
        if isinstance(_next_attempt_at,  Unset):
            next_attempt_at = UNSET
        else:
            next_attempt_at = datetime.datetime.fromisoformat(_next_attempt_at)




        delivery_detail = cls(
            attempt_count=attempt_count,
            attempts=attempts,
            event_id=event_id,
            state=state,
            subscription_id=subscription_id,
            type_=type_,
            last_attempt_at=last_attempt_at,
            next_attempt_at=next_attempt_at,
        )


        delivery_detail.additional_properties = d
        return delivery_detail

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

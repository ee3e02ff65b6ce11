from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.error_detail import ErrorDetail





T = TypeVar("T", bound="Error")



@_attrs_define
class Error:
    """ Every error response: ``{"error", "code"}`` plus ``details`` for validation errors,
    and ``requestId``: the id in the response's ``X-Request-Id`` and the logs.

        Attributes:
            code (str): known values: internal, invalid_request, unauthorized, not_found, reservation_not_active,
                units_unavailable, workload_exists, stale_topology, reservation_not_in_review, reservation_not_changeable,
                subscription_limit, plan_stale, not_enough_released, not_enough_units, unknown_reservation, org_not_in_audience,
                delivery_not_failed, subscription_disabled, storage_limit, conflict, idempotency_in_progress,
                precondition_failed, units_not_in_reservation, units_not_reservable, units_not_sellable, idempotency_key_reused,
                unsupported_media_type; a newer API may send others
            error (str):
            details (list[ErrorDetail] | Unset):
            request_id (str | Unset):
     """

    code: str
    error: str
    details: list[ErrorDetail] | Unset = UNSET
    request_id: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.error_detail import ErrorDetail # noqa: PLC0415
        code = self.code

        error = self.error

        details: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.details, Unset):
            details = []
            for details_item_data in self.details:
                details_item = details_item_data.to_dict()
                details.append(details_item)



        request_id = self.request_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "code": code,
            "error": error,
        })
        if details is not UNSET:
            field_dict["details"] = details
        if request_id is not UNSET:
            field_dict["requestId"] = request_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_detail import ErrorDetail # noqa: PLC0415
        d = dict(src_dict)
        code = d.pop("code")

        error = d.pop("error")

        _details = d.pop("details", UNSET)
        details: list[ErrorDetail] | Unset = UNSET
        if _details is not UNSET:
            details = []
            for details_item_data in _details:
                details_item = ErrorDetail.from_dict(details_item_data)



                details.append(details_item)


        request_id = d.pop("requestId", UNSET)

        error = cls(
            code=code,
            error=error,
            details=details,
            request_id=request_id,
        )


        error.additional_properties = d
        return error

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

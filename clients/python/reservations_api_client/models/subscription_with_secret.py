from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast
import datetime






T = TypeVar("T", bound="SubscriptionWithSecret")



@_attrs_define
class SubscriptionWithSecret:
    """ A subscription with its signing secret: the answer of a subscribe and of a rotation,
    the only times the secret is shown.

        Attributes:
            created_at (datetime.datetime):
            id (str):
            secret (str): whsec_...: shown this once
            status (str): known values: active, disabled; a newer API may send others
            url (str):
            description (str | Unset):
            disabled_at (datetime.datetime | Unset):
            types (list[str] | Unset): absent: every type
     """

    created_at: datetime.datetime
    id: str
    secret: str
    status: str
    url: str
    description: str | Unset = UNSET
    disabled_at: datetime.datetime | Unset = UNSET
    types: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        id = self.id

        secret = self.secret

        status = self.status

        url = self.url

        description = self.description

        disabled_at: str | Unset = UNSET
        if not isinstance(self.disabled_at, Unset):
            disabled_at = self.disabled_at.isoformat()

        types: list[str] | Unset = UNSET
        if not isinstance(self.types, Unset):
            types = self.types




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "createdAt": created_at,
            "id": id,
            "secret": secret,
            "status": status,
            "url": url,
        })
        if description is not UNSET:
            field_dict["description"] = description
        if disabled_at is not UNSET:
            field_dict["disabledAt"] = disabled_at
        if types is not UNSET:
            field_dict["types"] = types

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("createdAt"))




        id = d.pop("id")

        secret = d.pop("secret")

        status = d.pop("status")

        url = d.pop("url")

        description = d.pop("description", UNSET)

        _disabled_at = d.pop("disabledAt", UNSET)
        disabled_at: datetime.datetime | Unset
        if isinstance(_disabled_at,  Unset):
            disabled_at = UNSET
        else:
            disabled_at = datetime.datetime.fromisoformat(_disabled_at)




        types = cast(list[str], d.pop("types", UNSET))


        subscription_with_secret = cls(
            created_at=created_at,
            id=id,
            secret=secret,
            status=status,
            url=url,
            description=description,
            disabled_at=disabled_at,
            types=types,
        )


        subscription_with_secret.additional_properties = d
        return subscription_with_secret

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

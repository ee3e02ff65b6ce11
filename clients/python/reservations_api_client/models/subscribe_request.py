from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="SubscribeRequest")



@_attrs_define
class SubscribeRequest:
    """ The body of ``POST /v1/webhooks``: where to send, which types (absent: every type).

        Attributes:
            url (str): https:// with a host name (no address, no user info, no fragment); port 443 or 1024-65535; printable
                ASCII without spaces, backslashes or #
            description (None | str | Unset):
            types (list[str] | None | Unset): event types to deliver; absent: every type
     """

    url: str
    description: None | str | Unset = UNSET
    types: list[str] | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        url = self.url

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        types: list[str] | None | Unset
        if isinstance(self.types, Unset):
            types = UNSET
        elif isinstance(self.types, list):
            types = self.types


        else:
            types = self.types


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "url": url,
        })
        if description is not UNSET:
            field_dict["description"] = description
        if types is not UNSET:
            field_dict["types"] = types

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        url = d.pop("url")

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))


        def _parse_types(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                types_type_0 = cast(list[str], data)

                return types_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        types = _parse_types(d.pop("types", UNSET))


        subscribe_request = cls(
            url=url,
            description=description,
            types=types,
        )

        return subscribe_request


"""API keys in the table: an item per key's hash (``APIKEY#<sha256>``), another per display id
(``KEYID#<id>``, which keeps display ids unique), and the lookup a request's key is checked by."""

from __future__ import annotations

from typing import Any

from reservations.kernel.aws.codec import Item
from reservations.kernel.aws.queries import get_item
from reservations.kernel.caller import ApiKey
from reservations.kernel.times import format_time, parse_time

APIKEY_PREFIX = "APIKEY#"
APIKEY_SK = "APIKEY"
KEYID_PREFIX = "KEYID#"
KEYID_SK = "KEYID"


def apikey_pk(key_hash: str) -> str:
    return APIKEY_PREFIX + key_hash


def apikey_key(key_hash: str) -> Item:
    return {"PK": apikey_pk(key_hash), "SK": APIKEY_SK}


def keyid_key(key_id: str) -> Item:
    return {"PK": KEYID_PREFIX + key_id, "SK": KEYID_SK}


def key_id_of(partition_key: str) -> str:
    """The key id a key id marker's partition key names."""
    return partition_key.removeprefix(KEYID_PREFIX)


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value or ())


def api_key_from_item(item: Item) -> ApiKey:
    expires_at = item.get("expiresAt")
    return ApiKey(
        key_id=item["keyId"],
        org_id=item["orgId"],
        permissions=frozenset(_strings(item.get("permissions"))),
        platform_operator=bool(item.get("platformOperator", False)),
        revoked=bool(item.get("revoked", False)),
        expires_at=parse_time(expires_at) if expires_at else None,
    )


def load_api_key(key_hash: str) -> ApiKey | None:
    item = get_item(apikey_key(key_hash))
    return api_key_from_item(item) if item else None


def apikey_item(key_hash: str, api_key: ApiKey) -> Item:
    return {
        **apikey_key(key_hash),
        "keyId": api_key.key_id,
        "orgId": api_key.org_id,
        "permissions": sorted(api_key.permissions),
        "platformOperator": api_key.platform_operator,
        "revoked": api_key.revoked,
        "expiresAt": format_time(api_key.expires_at) if api_key.expires_at else None,
    }

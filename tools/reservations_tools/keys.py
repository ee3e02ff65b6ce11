"""``reservations-keys``: the operator makes, revokes and lists API keys.

    reservations-keys create --org ORG --permission P [--permission P ...]
                             [--id ID] [--expires-at RFC3339] [--table NAME] [--endpoint-url URL]
    reservations-keys revoke KEY_ID [...]
    reservations-keys list --org ORG [...]
    reservations-keys platform [--org ORG] [...]

``create`` prints the new key once (``vl_`` and 43 random characters from ``secrets``) and
stores only its SHA-256. Its id (given, or derived from the key) is unique across the table:
a ``KEYID#<id>`` marker is put in the same transaction as the key, both only if absent.
A key is a platform operator key because its org is the platform's org, and for no other
reason: the table records that org once (``platform --org``, or the fleet loader from
``platformOrgId``), and ``create`` makes every key of that org, and no other, an operator
key. ``revoke`` marks the key revoked (kept for the audit trail; it stops working within the
functions' 60 s key cache). ``list`` shows an org's keys: id, permissions, operator, revoked,
expiry; never a key or a hash. The fleet loader writes its keys with :func:`put_key`.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from datetime import datetime
from typing import Any, get_args

import boto3
from botocore.exceptions import ClientError

from reservations.kernel.api_keys import (
    APIKEY_PREFIX,
    api_key_from_item,
    apikey_item,
    apikey_key,
    keyid_key,
)
from reservations.kernel.auth import KEY_PREFIX, derive_key_id, hash_key
from reservations.kernel.aws.codec import from_attributes, to_attributes
from reservations.kernel.caller import ApiKey
from reservations.kernel.ids import is_resource_id
from reservations.kernel.times import parse_given_time
from reservations.webhooks.table.platform import platform_key
from reservations_tools.fleet.model import Permission

# The platform's org: the one item saying whose keys are operator keys.
PLATFORM_KEY = to_attributes(platform_key())
PERMISSIONS = get_args(Permission)


class KeyCommandError(Exception):
    """The command cannot do what it was asked; the message says why."""


def keyid_marker(key_id: str, key_hash: str, org_id: str) -> dict[str, Any]:
    """The item that makes a key id unique across the table (it names the key's hash)."""
    return {**keyid_key(key_id), "keyHash": key_hash, "orgId": org_id}


def new_key() -> str:
    """A fresh API key: ``vl_`` and 256 bits from the operating system's CSPRNG."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def put_key(client: Any, table: str, key: str, api_key: ApiKey, *, again: bool = False) -> None:
    """Store the key's hash and its id marker in one transaction. The id must be new, or,
    with ``again`` (a fleet file loaded anew), already this same key's."""
    key_hash = hash_key(key)
    absent: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(PK)"}
    this_key: dict[str, Any] = {
        "ConditionExpression": "attribute_not_exists(PK) OR keyHash = :hash",
        "ExpressionAttributeValues": {":hash": {"S": key_hash}},
    }
    marker = to_attributes(keyid_marker(api_key.key_id, key_hash, api_key.org_id))
    item = to_attributes(apikey_item(key_hash, api_key))
    try:
        client.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": table, "Item": marker, **(this_key if again else absent)}},
                {"Put": {"TableName": table, "Item": item, **({} if again else absent)}},
            ]
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        raise KeyCommandError(f"key id {api_key.key_id} is taken by another key") from error


def platform_org(client: Any, table: str) -> str | None:
    """The org the table records as the platform's, or None before one is recorded."""
    found = client.get_item(TableName=table, Key=PLATFORM_KEY, ConsistentRead=True).get("Item")
    return str(found["orgId"]["S"]) if found else None


def record_platform_org(client: Any, table: str, org_id: str, *, replace: bool = False) -> None:
    """Record ``org_id`` as the platform's org: when none is, or it is already; with
    ``replace`` (a fleet file loaded whole, which puts every key anew) whatever was."""
    condition: dict[str, Any] = {
        "ConditionExpression": "attribute_not_exists(PK) OR orgId = :org",
        "ExpressionAttributeValues": {":org": {"S": org_id}},
    }
    try:
        client.put_item(
            TableName=table,
            Item={**PLATFORM_KEY, "orgId": {"S": org_id}},
            **({} if replace else condition),
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        raise KeyCommandError(
            f"the platform's org is already {platform_org(client, table)}, not {org_id}"
        ) from error


def revoke_hash(client: Any, table: str, key_hash: str) -> bool:
    """Mark the key revoked (the item stays for the audit trail); False when there is none."""
    try:
        client.update_item(
            TableName=table,
            Key=to_attributes(apikey_key(key_hash)),
            UpdateExpression="SET revoked = :yes",
            ConditionExpression="attribute_exists(PK)",  # never re-create a deleted key
            ExpressionAttributeValues={":yes": {"BOOL": True}},
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False
    return True


def revoke(client: Any, table: str, key_id: str) -> None:
    """Revoke the key with this id; KeyCommandError when no key has it."""
    found = client.get_item(
        TableName=table,
        Key=to_attributes(keyid_key(key_id)),
        ConsistentRead=True,
    ).get("Item")
    if found is None or not revoke_hash(client, table, found["keyHash"]["S"]):
        raise KeyCommandError(f"no key has id {key_id}")


def org_keys(client: Any, table: str, org_id: str) -> list[ApiKey]:
    """An org's keys, sorted by id (a Scan: an operator's command, not a request path)."""
    found: list[ApiKey] = []
    for page in client.get_paginator("scan").paginate(
        TableName=table,
        FilterExpression="begins_with(PK, :prefix) AND orgId = :org",
        # The partition key holds the hash: it is never read back.
        ProjectionExpression="keyId, orgId, #p, platformOperator, revoked, expiresAt",
        ExpressionAttributeNames={"#p": "permissions"},
        ExpressionAttributeValues={":prefix": {"S": APIKEY_PREFIX}, ":org": {"S": org_id}},
        ConsistentRead=True,
    ):
        found.extend(api_key_from_item(from_attributes(item)) for item in page["Items"])
    return sorted(found, key=lambda k: k.key_id)


def _resource_id(value: str) -> str:
    if not is_resource_id(value):
        raise argparse.ArgumentTypeError("must be 1-128 letters, digits, '.', '_', ':' or '-'")
    return value


def _moment(value: str) -> datetime:
    """``--expires-at``, by the rule every given time follows."""
    try:
        return parse_given_time(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reservations-keys", description=__doc__.split("\n")[0])
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--table", default="ReservationsTable", help="table name")
    where.add_argument("--endpoint-url", help="DynamoDB endpoint (default: AWS)")
    where.add_argument("--region", help="AWS region (default: from the environment)")
    commands = parser.add_subparsers(dest="command", required=True)
    create = commands.add_parser("create", parents=[where], help="make a key, print it once")
    create.add_argument("--org", required=True, type=_resource_id)
    create.add_argument("--permission", action="append", required=True, choices=PERMISSIONS)
    create.add_argument("--id", type=_resource_id, help="the key's id (default: derived)")
    create.add_argument("--expires-at", type=_moment, help="RFC 3339, e.g. 2027-01-01T00:00:00Z")
    revoke_ = commands.add_parser("revoke", parents=[where], help="revoke a key by its id")
    revoke_.add_argument("key_id", type=_resource_id)
    listing = commands.add_parser("list", parents=[where], help="an org's keys (never a key)")
    listing.add_argument("--org", required=True, type=_resource_id)
    platform = commands.add_parser(
        "platform", parents=[where], help="show the platform's org, or record it (once)"
    )
    platform.add_argument("--org", type=_resource_id, help="record ORG as the platform's org")
    return parser


def _create(client: Any, args: argparse.Namespace) -> None:
    """A key of ``--org``: an operator key exactly when that org is the platform's."""
    key = new_key()
    api_key = ApiKey(
        key_id=args.id or derive_key_id(key),
        org_id=args.org,
        permissions=frozenset(args.permission),
        platform_operator=args.org == platform_org(client, args.table),
        expires_at=args.expires_at,
    )
    put_key(client, args.table, key, api_key)
    print(f"key id: {api_key.key_id}")
    print(f"key:    {key}")
    if api_key.platform_operator:
        print(f"{args.org} is the platform's org: this is an operator key.", file=sys.stderr)
    print("The key is shown this once; only its hash is stored.", file=sys.stderr)


def _platform(client: Any, args: argparse.Namespace) -> None:
    if args.org is not None:
        record_platform_org(client, args.table, args.org)
    print(platform_org(client, args.table) or "(none recorded: no key is an operator key)")


def _list(client: Any, args: argparse.Namespace) -> None:
    print("ID\tPERMISSIONS\tOPERATOR\tREVOKED\tEXPIRES")
    for api_key in org_keys(client, args.table, args.org):
        expires = api_key.expires_at.isoformat() if api_key.expires_at else "-"
        print(
            f"{api_key.key_id}\t{','.join(sorted(api_key.permissions)) or '-'}\t"
            f"{'yes' if api_key.platform_operator else 'no'}\t"
            f"{'yes' if api_key.revoked else 'no'}\t{expires}"
        )


def main(argv: list[str] | None = None) -> int:
    """The ``reservations-keys`` command."""
    args = _parser().parse_args(argv)
    client = boto3.client("dynamodb", endpoint_url=args.endpoint_url, region_name=args.region)
    try:
        if args.command == "create":
            _create(client, args)
        elif args.command == "revoke":
            revoke(client, args.table, args.key_id)
            print(f"revoked {args.key_id}")
        elif args.command == "platform":
            _platform(client, args)
        else:
            _list(client, args)
    except KeyCommandError as error:
        print(f"reservations-keys: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

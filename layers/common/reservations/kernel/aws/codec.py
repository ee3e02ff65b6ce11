"""Items as plain dicts and in DynamoDB's attribute-value form, and the epoch seconds a TTL
attribute takes."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

Item = dict[str, Any]
# The attribute the table's TTL reads: when DynamoDB may delete the item (epoch seconds).
EXPIRES_AT_EPOCH = "expiresAtEpoch"

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def to_attributes(item: Mapping[str, Any]) -> dict[str, Any]:
    """A plain item (None values dropped) in DynamoDB's attribute-value form."""
    return {name: _serializer.serialize(value) for name, value in item.items() if value is not None}


def from_attributes(attributes: Mapping[str, Any]) -> Item:
    return {name: _deserializer.deserialize(value) for name, value in attributes.items()}


def epoch(moment: datetime) -> int:
    return int(moment.timestamp())

"""DynamoDB's size of an item, counted as DynamoDB counts it, to refuse what it would refuse.

Attribute names and string values count their UTF-8 bytes; a number about one byte per two
significant digits plus one; lists and maps three bytes plus one per element. The number
rule is DynamoDB's own approximation, so this rounds up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_ITEM_BYTES = 400 * 1024


def _number_size(text: str) -> int:
    digits = text.lstrip("-").replace(".", "").split("e")[0].split("E")[0].strip("0") or "0"
    return (len(digits) + 1) // 2 + 1 + (1 if text.startswith("-") else 0)


def value_size(value: Mapping[str, Any]) -> int:
    """Bytes of one attribute value in DynamoDB's wire form (``{"S": ...}`` etc.)."""
    ((kind, inner),) = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "N":
        return _number_size(inner)
    if kind == "B":
        return len(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(s.encode()) for s in inner)
    if kind == "NS":
        return sum(_number_size(n) for n in inner)
    if kind == "BS":
        return sum(len(b) for b in inner)
    if kind == "L":
        return 3 + sum(1 + value_size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_size(v) for k, v in inner.items())
    raise ValueError(f"unknown attribute type {kind}")


def item_size(attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """Bytes DynamoDB counts for an item in wire form: names plus values."""
    return sum(len(name.encode()) + value_size(value) for name, value in attributes.items())

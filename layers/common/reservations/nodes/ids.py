"""The formats of the ids of what is on a node: a unit (its PCI address) and a workload;
and a request body's unit ids, as every slice that takes them reads them."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field, StrictStr

from reservations.kernel.bodies import invalid_body
from reservations.kernel.errors import FieldProblem

# A unit is an IOMMU group named by its PCI address, domain:bus:device.function, in hex.
# The anchored form is what the request schema (and so the OpenAPI document) declares.
PCI_ADDRESS = r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$"
_UNIT_ID = re.compile(PCI_ADDRESS.strip("^$"))
_WORKLOAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
MAX_UNITS = 32


def is_workload_id(value: str) -> bool:
    return _WORKLOAD_ID.fullmatch(value) is not None


def normalize_unit_id(value: str) -> str | None:
    """The canonical (lower-case) unit id, or None when ``value`` is not a PCI address."""
    if _UNIT_ID.fullmatch(value) is None:
        return None
    return value.lower()


# ``unitIds``: PCI addresses, compared case-insensitively (and answered lower-case).
UnitIds = list[Annotated[StrictStr, Field(pattern=PCI_ADDRESS)]]


def unit_ids_field(description: str) -> Any:
    """A body's ``unitIds``: 1 to MAX_UNITS of them, no duplicates."""
    return Field(
        alias="unitIds",
        min_length=1,
        max_length=MAX_UNITS,
        json_schema_extra={"uniqueItems": True},
        description=description,
    )


def normalized_unit_ids(unit_ids: list[str]) -> list[str]:
    """``unitIds`` lower-cased; 400 naming each one that is not a PCI address or repeats."""
    problems = []
    normalized: list[str] = []
    for index, unit_id in enumerate(unit_ids):
        canonical = normalize_unit_id(unit_id)
        if canonical is None:
            problems.append(
                FieldProblem(f"unitIds[{index}]", "must be a PCI address dddd:bb:dd.f in hex")
            )
        elif canonical in normalized:
            problems.append(FieldProblem(f"unitIds[{index}]", f"duplicate of {canonical}"))
        normalized.append(canonical or unit_id)
    if problems:
        raise invalid_body(problems)
    return normalized

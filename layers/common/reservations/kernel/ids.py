"""The formats of the ids that appear in paths, bodies, messages and fleet files."""

from __future__ import annotations

import re

# Node and reservation ids are opaque, but bounded: anything else in a path is "not found".
# The anchored form is what request schemas (org ids in a create) declare.
RESOURCE_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_RESOURCE_ID = re.compile(RESOURCE_ID.strip("^$"))
# A unit is an IOMMU group named by its PCI address, domain:bus:device.function, in hex.
# The anchored form is what the request schema (and so the OpenAPI document) declares.
PCI_ADDRESS = r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$"
_UNIT_ID = re.compile(PCI_ADDRESS.strip("^$"))
_WORKLOAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def is_resource_id(value: str) -> bool:
    """A well-formed node or reservation id."""
    return _RESOURCE_ID.fullmatch(value) is not None


def is_workload_id(value: str) -> bool:
    return _WORKLOAD_ID.fullmatch(value) is not None


def normalize_unit_id(value: str) -> str | None:
    """The canonical (lower-case) unit id, or None when ``value`` is not a PCI address."""
    if _UNIT_ID.fullmatch(value) is None:
        return None
    return value.lower()


# SQS takes at most 128 characters, of letters, digits and punctuation, as a FIFO
# de-duplication id. A termination id is one, and so are its redelivery ids
# (``<id>#r<n>``): keeping ids to 100 characters leaves room for any n.
MAX_TERMINATION_ID = 100
_TERMINATION_ID = re.compile(rf"[A-Za-z0-9!-/:-@\[-`{{-~]{{1,{MAX_TERMINATION_ID}}}")


def is_termination_id(value: str) -> bool:
    """A termination id that SQS accepts as a de-duplication id, with room for ``#r<n>``."""
    return _TERMINATION_ID.fullmatch(value) is not None

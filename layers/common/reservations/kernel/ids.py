"""The format of the ids that appear in paths, bodies, messages and fleet files: a resource
id, opaque but bounded. A slice whose ids look otherwise says so in its own ``ids.py``."""

from __future__ import annotations

import re

# Resource ids are opaque, but bounded: anything else in a path is "not found". The anchored
# form is what request schemas (org ids in a body) declare.
RESOURCE_ID = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_RESOURCE_ID = re.compile(RESOURCE_ID.strip("^$"))


def is_resource_id(value: str) -> bool:
    """A well-formed resource id."""
    return _RESOURCE_ID.fullmatch(value) is not None

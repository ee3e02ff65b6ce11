"""A model as the API writes it: what ``to_dict()`` gives, with each time in UTC with a
``Z`` again, as the API sent it (``to_dict()`` writes a datetime back as ``+00:00`` with
microseconds).

The API writes times to the second (``2026-12-01T00:00:00Z``), an event's ``time`` and a
usage row's ``asOf`` to the millisecond always (``2026-12-01T05:08:47.123Z``,
``…:05.000Z``), and a termination's times to the millisecond unless whole (``…:42.345Z``,
``…:42Z``); :func:`api_json` gives those texts back.
Fields and values the client does not know are in the models' ``additional_properties``,
which ``to_dict()`` writes as they came.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A datetime as ``datetime.isoformat()`` writes one in UTC.
_ISO_UTC = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{6}))?\+00:00")
# The times always written to the millisecond: an event's, and a usage row's watermark.
MILLISECOND_TIMES = frozenset({"time", "asOf"})


def api_json(value: Any) -> Any:
    """``value`` (a generated model, or what its ``to_dict()`` gave, or a list of either)
    as JSON the API would write: plain dicts, lists and scalars, times with ``Z``; a model's
    fields this version does not know after those it knows."""
    return _rewritten(value, None)


def _as_dict(model: Any) -> dict[str, Any]:
    """``model.to_dict()``, its additional properties last (``to_dict()`` puts them first)."""
    found: dict[str, Any] = model.to_dict()
    unknown = set(getattr(model, "additional_properties", {}))
    return {name: found[name] for name in sorted(found, key=lambda name: name in unknown)}


def _rewritten(value: Any, key: str | None) -> Any:
    if hasattr(value, "to_dict"):
        value = _as_dict(value)
    if isinstance(value, Mapping):
        return {name: _rewritten(item, name) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rewritten(item, key) for item in value]
    if isinstance(value, str):
        return zulu(value, milliseconds=key in MILLISECOND_TIMES)
    return value


def zulu(text: str, milliseconds: bool = False) -> str:
    """An ISO UTC time (``…+00:00``) with a ``Z``, its fraction to the millisecond (none
    when whole, unless ``milliseconds``); any other text as it is."""
    found = _ISO_UTC.fullmatch(text)
    if found is None:
        return text
    micro = int(found[2] or 0)
    if micro % 1000:  # finer than the API writes: kept whole
        return f"{found[1]}.{found[2]}Z"
    if micro or milliseconds:
        return f"{found[1]}.{micro // 1000:03d}Z"
    return f"{found[1]}Z"

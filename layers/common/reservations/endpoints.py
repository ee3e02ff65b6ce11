"""Every endpoint of the API: each slice's ``ENDPOINTS`` (``<slice>/endpoints.py``, where
each is declared once), slice after slice in the order below, which is the OpenAPI
document's. The API's table of contents, for the document's generator, the template's
function blocks and the tests; no slice imports it. A new endpoint joins its slice's
``ENDPOINTS``; a new slice with endpoints joins ``SLICES``."""

from __future__ import annotations

import importlib
from types import ModuleType

from reservations.kernel.http.routes import ApiRoute

SLICES = ("nodes", "capacity", "lifecycle", "workloads", "events", "webhooks", "usage")


def _declared(name: str) -> ModuleType:
    return importlib.import_module(f"reservations.{name}.endpoints")


ALL: tuple[ApiRoute, ...] = tuple(route for name in SLICES for route in _declared(name).ENDPOINTS)
# Each function's endpoint as its ENDPOINT variable names it: <slice>.<function>.
ENDPOINT_NAMES: dict[str, str] = {
    route.function: f"{name}.{route.function}"
    for name in SLICES
    for route in _declared(name).ENDPOINTS
}


def __getattr__(name: str) -> ApiRoute:
    """An endpoint by the name its slice declares it under (``endpoints.RECLAIM``), for the
    tests and tools that reach several slices' endpoints."""
    for slice_name in SLICES:
        found = getattr(_declared(slice_name), name, None)
        if isinstance(found, ApiRoute):
            return found
    raise AttributeError(f"no endpoint {name} in any slice's endpoints")

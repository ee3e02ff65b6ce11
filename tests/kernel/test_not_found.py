"""The ``$default`` route's function, in-process: whatever reaches it gets the one 404,
byte for byte the other functions' (API Gateway's own 404 must never answer)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import EVENTS, event_file, list_units_event
from devstack.functions import invoke, load_function
from tests.support.bodies import comparable

pytestmark = pytest.mark.moto

EVENT_FILES = sorted(
    p.relative_to(EVENTS).as_posix() for p in (EVENTS / "not_found").glob("*.json")
)


@pytest.fixture(scope="module")
def handler() -> ModuleType:
    return load_function("not_found")


@pytest.fixture
def reference(load_fleet: Any) -> Any:
    """The list function's 404 for an unknown node."""
    load_fleet(f.fleet([]))
    return invoke(
        load_function("list_units"), list_units_event("node-zz", "Bearer vl_local_test_owner")
    )


def test_there_are_events_for_the_default_route() -> None:
    assert len(EVENT_FILES) >= 3


@pytest.mark.parametrize("name", EVENT_FILES)
def test_every_event_is_the_one_404(handler, reference, name):
    result = invoke(handler, event_file(name))
    assert reference.status == 404
    assert comparable(result) == comparable(reference)


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
@pytest.mark.parametrize("path", ["/", "/v1/nodes/node-a/reservations"])
def test_any_method_and_path_without_a_key_is_the_404_not_a_401(handler, reference, method, path):
    event = event_file("not_found/unknown_route.json")
    event["headers"].pop("authorization")
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    result = invoke(handler, event)
    assert comparable(result) == comparable(reference)

"""Every function checks its settings first: a missing table name fails the invocation with
an error naming it, before any request to AWS (not a DynamoDB error about no table)."""

from __future__ import annotations

from types import ModuleType

import pytest

from devstack.api_events import event_file
from devstack.functions import FakeContext, load_function
from reservations.kernel.settings import SettingsError, settings

pytestmark = pytest.mark.moto

EVENTS = {
    "list_units": "list_units/allowed.json",
    "reclaim": "reclaim/real_run.json",
    "not_found": "not_found/unknown_route.json",
    "termination_reports": "termination_reports/terminated.json",
    "sweeper": "sweeper/scheduled.json",
}


@pytest.fixture(scope="module")
def functions() -> dict[str, ModuleType]:
    return {name: load_function(name) for name in EVENTS}


@pytest.mark.parametrize("name", sorted(EVENTS))
def test_a_function_without_its_table_name_fails_first_naming_it(
    aws, load_fleet, functions, sent_requests, monkeypatch, name
):
    monkeypatch.delenv("TABLE_NAME")
    settings.cache_clear()
    sent_requests.clear()
    with pytest.raises(SettingsError, match="TABLE_NAME: not set"):
        functions[name].lambda_handler(event_file(EVENTS[name]), FakeContext())
    assert sent_requests.sent == []
    monkeypatch.undo()
    settings.cache_clear()

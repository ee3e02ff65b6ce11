"""The generated document describes both feeds as they answer, and their query parameters'
patterns allow exactly what the feeds accept (values drawn, the committed spec asked)."""

from __future__ import annotations

import json
import os
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devstack import openapi
from reservations.events.feeds import FeedQuery, node_feed
from reservations.events.models import EVENT_TYPES, NodeFeedAccess
from reservations.kernel.caller import Caller
from reservations.kernel.errors import InvalidRequest
from tests.support import event_scenario as s
from tests.support.event_fakes import FakeEvents
from tests.support.query_parameters import allows

DOCUMENT = json.loads(openapi.SPEC.read_text())
NODE_FEED = DOCUMENT["paths"]["/v1/nodes/{nodeId}/events"]["get"]
ORG_FEED = DOCUMENT["paths"]["/v1/events"]["get"]
TYPES = list(EVENT_TYPES)
OWNER = Caller("key-owner", "org-acme", frozenset({"reservation.read"}))
EXAMPLES = settings(max_examples=int(os.environ.get("AGREEMENT_EXAMPLES", "120")), deadline=None,
                    derandomize=True)  # fmt: skip


def test_both_feeds_document_their_answers_and_parameters():
    for operation in (NODE_FEED, ORG_FEED):
        assert set(operation["responses"]) == {"200", "400", "401", "404", "429", "500", "503"}
        names = {p["name"] for p in operation["parameters"] if p["in"] == "query"}
        assert names == {"types", "after", "limit", "cursor"}
    page = DOCUMENT["components"]["schemas"]["EventPage"]
    assert set(page["properties"]) == {"items", "nextCursor", "hasMore"}
    assert set(page["required"]) == {"items", "nextCursor", "hasMore"}  # on every page
    event = DOCUMENT["components"]["schemas"]["Event"]
    assert event["required"] == [
        "specversion", "id", "type", "source", "subject", "time", "datacontenttype", "data",
    ]  # fmt: skip
    assert event["properties"]["type"]["enum"] == TYPES


def _parameter(name: str) -> dict:
    [parameter] = [p for p in NODE_FEED["parameters"] if p["name"] == name]
    return parameter


def _accepted(**query: str) -> bool:
    table = FakeEvents(access={"node-a": NodeFeedAccess("org-acme")})
    try:
        node_feed(OWNER, "node-a", FeedQuery(**query), table, b"k" * 32, s.T0 + timedelta(days=1))
    except InvalidRequest:
        return False
    return True


TYPE_VALUES = st.one_of(
    st.sampled_from(["", ",", " node.updated ", "node.updated,", "Node.updated", "node.*"]),
    st.lists(st.sampled_from([*TYPES, " ", "", "node.gone"]), min_size=1, max_size=4).map(",".join),
    st.text(alphabet="abdeilnoprstuvw._, ", max_size=30),
)


@EXAMPLES
@given(value=TYPE_VALUES)
def test_types_the_spec_allows_are_exactly_those_the_feed_accepts(value):
    """Exactly, but for spaces around the items: the feed reads them too (lenient)."""
    if allows(_parameter("types"), value):
        assert _accepted(types=value), value
    assert _accepted(types=value) == allows(_parameter("types"), value, lenient=True), value


@EXAMPLES
@given(value=st.one_of(st.sampled_from(["", "0", "1", "50", "100", "101", "007", "1.0"]),
                       st.text(alphabet="0123456789.-", max_size=4)))  # fmt: skip
def test_limits_the_spec_allows_are_exactly_those_the_feed_accepts(value):
    assert _accepted(limit=value) == allows(_parameter("limit"), value), value


@pytest.mark.parametrize(
    "value",
    ["2026-11-30T12:00:00Z", "2026-11-30T12:00:00.5+01:00", "", "2026-11-30", "yesterday",
     "2026-11-30T12:00:00"],
)  # fmt: skip
def test_an_after_the_spec_refuses_is_refused(value):
    assert _accepted(after=value) == allows(_parameter("after"), value)

"""The fleet index's pure rules: which entries a reservation has, what a change writes,
and which partitions and sort-key ranges each status filter reads."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reservations.kernel.errors import InvalidRequest
from reservations.lifecycle.rules.fleet import (
    LIVE_STATUSES,
    entry_status,
    index_change,
    index_entries,
    may_hold_model,
    may_match,
    parse_filters,
    plan,
)

pytestmark = pytest.mark.disable_socket

NOW = datetime(2027, 3, 1, 12, 0, 0, 500_000, tzinfo=UTC)
LIVE_IMAGE = {"PK": "NODE#node-a", "SK": "RES#res-1", "id": "res-1", "nodeId": "node-a",
              "endsAt": "2027-04-01T00:00:00Z", "managingOrgIds": ["org-broker"],
              "allowedOrgIds": ["org-lab", "org-broker"], "status": "active", "version": 3}  # fmt: skip


def _filters(**given: str) -> object:
    fields = ("role", "status", "node_id", "gpu_model_id", "ends_before", "ends_after")
    return parse_filters(*(given.get(name) for name in fields))


def test_one_entry_per_org_by_its_roles_and_one_for_the_operator():
    entries = index_entries(LIVE_IMAGE, "org-acme")
    sort_key = "2027-04-01T00:00:00Z#node-a#res-1"
    assert {pk: e.get("roles") for (pk, sk), e in entries.items() if sk == sort_key} == {
        "FLEET#/platform#live": None,
        "FLEET#org-acme#live": ["owner"],
        "FLEET#org-broker#live": ["audience", "managing"],
        "FLEET#org-lab#live": ["audience"],
    }
    ended = index_entries({**LIVE_IMAGE, "PK": "NODEHIST#node-a", "endsAt": None}, None)
    assert sorted(ended) == [("FLEET#/platform#ended", "~#node-a#res-1"),
                             ("FLEET#org-broker#ended", "~#node-a#res-1"),
                             ("FLEET#org-lab#ended", "~#node-a#res-1")]  # fmt: skip


def test_a_change_writes_only_what_moved_or_changed():
    before = index_entries(LIVE_IMAGE, "org-acme")
    released = {**LIVE_IMAGE, "releasedUnitIds": ["u"], "version": 4}
    assert index_change(before, index_entries(released, "org-acme")).puts == ()
    # the stored status is kept (a status filter reads it): a review writes every entry
    reviewed = {**released, "status": "needs-review"}
    assert len(index_change(before, index_entries(reviewed, "org-acme")).puts) == 4
    derived = index_change(before, index_entries(released, "org-acme", review=True))
    assert [e["review"] for e in derived.puts] == [True] * 4
    dropped = {**LIVE_IMAGE, "allowedOrgIds": ["org-broker"], "version": 4}
    change = index_change(before, index_entries(dropped, "org-acme"))
    assert [k for k, _ in change.deletes] == [
        ("FLEET#org-lab#live", "2027-04-01T00:00:00Z#node-a#res-1")]  # fmt: skip
    assert change.puts == ()  # org-broker is still managing and in the audience
    moved = index_change(before, index_entries({**LIVE_IMAGE, "endsAt": None}, "org-acme"))
    assert len(moved.puts) == len(moved.deletes) == 4


def test_an_entry_keeps_the_models_its_units_have_on_the_node_now():
    image = {**LIVE_IMAGE, "reservedUnitIds": ["u1", "u2", "u3"]}
    models = {"u1": "h100", "u2": "a100", "u3": "h100", "u9": "l4"}
    entries = index_entries(image, "org-acme", models)
    assert {tuple(e["gpuModelIds"]) for e in entries.values()} == {("a100", "h100")}
    # a unit the node no longer lists has no model; a model change is an index change
    gone = index_entries(image, "org-acme", {"u1": "l4"})
    assert {tuple(e["gpuModelIds"]) for e in gone.values()} == {("l4",)}
    assert len(index_change(entries, gone).puts) == len(entries)
    assert all("gpuModelIds" not in e for e in index_entries(image, "org-acme").values())


def test_a_model_filter_skips_only_entries_that_say_they_hold_other_models():
    assert may_hold_model({"gpuModelIds": ["a100", "h100"]}, "h100")
    assert not may_hold_model({"gpuModelIds": ["a100"]}, "h100")
    assert not may_hold_model({"gpuModelIds": []}, "h100")
    assert may_hold_model({}, "h100")  # written before entries kept models: read it
    assert may_hold_model({"gpuModelIds": ["a100"]}, None)


@pytest.mark.parametrize(
    ("status", "ranges"),
    [
        (None, [("FLEET#o#live", "2027-03-01T12:00:00Z$", "~~")]),
        ("active", [("FLEET#o#live", "2027-03-01T12:00:00Z$", "~~")]),
        ("expired", [("FLEET#o#live", "0", "2027-03-01T12:00:00Z$"), ("FLEET#o#ended", "0", "~~")]),
        ("cancelled", [("FLEET#o#ended", "0", "~~")]),
        ("active,cancelled", [("FLEET#o#live", "2027-03-01T12:00:00Z$", "~~"),
                              ("FLEET#o#ended", "0", "~~")]),
        ("expired,pending", [("FLEET#o#live", "0", "~~"), ("FLEET#o#ended", "0", "~~")]),
    ],
)  # fmt: skip
def test_each_status_reads_the_partitions_and_ranges_that_can_hold_it(status, ranges):
    filters = _filters(status=status) if status else _filters()
    assert [(r.pk, r.low, r.high) for r in plan("o", filters, NOW)] == ranges


def test_ends_filters_are_ranges_rounded_to_the_stored_second():
    filters = _filters(ends_after="2027-05-01T00:00:00.2Z", ends_before="2027-06-01T02:00:00+02:00")
    [live] = plan("o", filters, NOW)
    assert (live.low, live.high) == ("2027-05-01T00:00:01Z", "2027-06-01T00:00:00Z")
    assert _filters().statuses == LIVE_STATUSES


@pytest.mark.parametrize(
    "given",
    [{"role": "owner,boss"}, {"status": "gone"}, {"node_id": "a,b c"},
     {"node_id": ",".join(f"n{i}" for i in range(51))}, {"gpu_model_id": "-x"},
     {"ends_before": "2027-01-01"}, {"ends_after": "10000-01-01T00:00:00Z"}],
)  # fmt: skip
def test_a_malformed_filter_is_a_400(given):
    with pytest.raises(InvalidRequest):
        _filters(**given)


def _entry(org: str = "org-broker") -> dict[str, object]:
    entries = index_entries({**LIVE_IMAGE, "startsAt": "2027-02-01T00:00:00Z"}, "org-acme")
    return next(e for (pk, _), e in entries.items() if pk == f"FLEET#{org}#live")


@pytest.mark.parametrize(
    ("image", "status"),
    [
        ({}, "active"),
        ({"status": "pending"}, "active"),  # started at startsAt, whatever was stored
        ({"status": "pending", "startsAt": "2027-03-01T12:00:01Z"}, "pending"),
        ({"status": "needs-review"}, "needs-review"),
        ({"review": True}, "needs-review"),  # the node's units changed since it was sold
        ({"review": True, "endsAt": "2027-03-01T12:00:00Z"}, "expired"),  # at its end
        ({"status": "cancelled", "endsAt": None}, "cancelled"),
        ({"status": "expired"}, "expired"),
        ({"endsAt": None}, "active"),
    ],
)
def test_an_entry_says_the_status_its_reservation_has_now(image, status):
    review = image.pop("review", False)
    entries = index_entries({**LIVE_IMAGE, "startsAt": "2027-02-01T00:00:00Z", **image},
                            "org-acme", review=review)  # fmt: skip
    assert {entry_status(e, NOW) for e in entries.values()} == {status}


def test_an_entry_written_before_entries_kept_a_status_says_none():
    assert entry_status({"nodeId": "node-a", "roles": ["managing"]}, NOW) is None


def test_an_entry_may_match_only_by_the_orgs_roles_its_status_node_and_models():
    entry = _entry()  # org-broker: audience and managing; active
    assert may_match(entry, _filters(), False, NOW)
    assert may_match(entry, _filters(role="audience"), False, NOW)
    assert not may_match(entry, _filters(role="owner"), False, NOW)
    assert may_match(entry, _filters(role="owner"), True, NOW)  # the operator's own index
    assert not may_match(entry, _filters(status="needs-review"), False, NOW)
    assert may_match(entry, _filters(status="active,cancelled"), False, NOW)
    assert not may_match(entry, _filters(node_id="node-b"), False, NOW)
    assert may_match(entry, _filters(node_id="node-b,node-a"), False, NOW)
    old = {"nodeId": "node-a", "roles": ["managing"]}  # no status: it is read
    assert may_match(old, _filters(status="needs-review"), False, NOW)
    assert not may_match(old, _filters(role="audience"), False, NOW)

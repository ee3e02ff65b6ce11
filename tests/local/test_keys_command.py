"""``reservations-keys`` over moto: create prints the key once and stores only its hash, ids
are unique across the table, revoke and list by org never show a key or a hash, and a made
key authenticates (and a revoked one does not) at the API."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest

from devstack import fleet_documents as f
from devstack.api_events import list_units_event, node_event
from devstack.functions import invoke, load_function
from reservations.kernel.http.resolver import key_cache
from reservations_tools import keys
from tests.support import state

pytestmark = pytest.mark.moto

KEY_LINE = re.compile(r"^key: +(vl_\S+)$", re.M)


@pytest.fixture(scope="module")
def list_units() -> Any:
    return load_function("list_units")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = keys.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def create(capsys, *extra: str) -> tuple[str, str]:
    code, out, _ = run(capsys, "create", "--org", "org-acme", "--permission", "reservation.read",
                       *extra)  # fmt: skip
    assert code == 0
    key_id = re.search(r"^key id: (\S+)$", out, re.M)
    plaintext = KEY_LINE.search(out)
    assert key_id
    assert plaintext
    return key_id.group(1), plaintext.group(1)


def test_create_prints_the_key_once_and_stores_only_its_hash(aws, capsys):
    key_id, key = create(capsys, "--id", "acme-ci")
    assert key_id == "acme-ci"
    assert re.fullmatch(r"vl_[A-Za-z0-9_-]{43}", key)
    table = state.whole_table(aws)
    text = repr(table)
    assert key not in text
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert {item["PK"] for item in table} == {f"APIKEY#{digest}", "KEYID#acme-ci"}
    stored = next(i for i in table if i["PK"].startswith("APIKEY#"))
    assert (stored["keyId"], stored["orgId"], stored["permissions"], stored["revoked"]) == (
        "acme-ci", "org-acme", ["reservation.read"], False,
    )  # fmt: skip
    assert stored["platformOperator"] is False


def test_two_keys_are_different_and_ids_unique_across_the_table(aws, capsys):
    first_id, first = create(capsys)
    second_id, second = create(capsys)
    assert first != second
    assert first_id != second_id
    code, out, err = run(capsys, "create", "--org", "org-other", "--permission",
                         "reservation.read", "--id", first_id)  # fmt: skip
    assert (code, out) == (1, "")
    assert f"key id {first_id} is taken" in err
    assert len([i for i in state.whole_table(aws) if i["PK"].startswith("APIKEY#")]) == 2


def test_a_made_key_authenticates_and_a_revoked_one_does_not(aws, load_fleet, capsys, list_units):
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")])]))
    key_id, key = create(capsys, "--id", "acme-reader")
    assert invoke(list_units, list_units_event("node-a", f"Bearer {key}")).status == 200
    assert run(capsys, "revoke", key_id)[:2] == (0, f"revoked {key_id}\n")
    key_cache.clear()  # a new container (a warm one stops within the 60 s cache)
    assert invoke(list_units, list_units_event("node-a", f"Bearer {key}")).status == 401


def _stored_key(aws, key_id: str) -> dict[str, Any]:
    return next(i for i in state.whole_table(aws) if i.get("keyId") == key_id and "orgId" in i
                and i["PK"].startswith("APIKEY#"))  # fmt: skip


def test_a_key_of_the_platforms_org_is_an_operator_key_and_no_other_is(aws, capsys):
    assert run(capsys, "platform", "--org", "org-acme")[:2] == (0, "org-acme\n")
    _, _, err = run(capsys, "create", "--org", "org-acme", "--permission", "node.write",
                      "--id", "op-1", "--expires-at", "2027-01-01T00:00:00Z")  # fmt: skip
    assert "operator key" in err
    stored = _stored_key(aws, "op-1")
    assert (stored["platformOperator"], stored["expiresAt"]) == (True, "2027-01-01T00:00:00Z")
    run(capsys, "create", "--org", "org-other", "--permission", "node.write", "--id", "o-1")
    assert _stored_key(aws, "o-1")["platformOperator"] is False


def test_no_key_is_an_operator_key_before_the_platforms_org_is_recorded(aws, capsys):
    assert run(capsys, "platform")[:2] == (0, "(none recorded: no key is an operator key)\n")
    create(capsys, "--id", "k-1")
    assert _stored_key(aws, "k-1")["platformOperator"] is False


def test_the_platforms_org_is_recorded_once(aws, capsys):
    run(capsys, "platform", "--org", "org-platform")
    assert run(capsys, "platform", "--org", "org-platform")[:2] == (0, "org-platform\n")
    code, out, err = run(capsys, "platform", "--org", "org-acme")
    assert (code, out) == (1, "")
    assert "the platform's org is already org-platform, not org-acme" in err
    assert run(capsys, "platform")[1] == "org-platform\n"


def test_no_flag_makes_another_orgs_key_an_operator_key(aws, load_fleet, capsys):
    """The command once took ``--operator`` for any org: a customer's key then took over
    another org's node. The flag is gone; the org alone decides."""
    load_fleet(f.fleet([f.node("node-a", [f.unit("0000:04:00.0")], owner="org-other")]))
    before = state.whole_table(aws)
    with pytest.raises(SystemExit) as exited:
        keys.main(["create", "--org", "org-acme", "--permission", "node.write", "--operator"])
    assert exited.value.code == 2
    assert state.whole_table(aws) == before
    _, customer = create(capsys, "--permission", "node.write", "--id", "acme-nodes")
    operator = KEY_LINE.search(
        run(capsys, "create", "--org", "org-platform", "--permission", "node.write")[1]
    )
    assert operator  # the fleet recorded org-platform as the platform's org
    put_node = load_function("put_node")
    takeover = {"ownerOrgId": "org-acme", "topologyGen": 1, "units": [f.unit("0000:04:00.0")]}
    refused = invoke(put_node, node_event("node-a", takeover, f"Bearer {customer}"))
    assert refused.status == 404
    assert state.item(aws, "node-a", "#NODE")["ownerOrgId"] == "org-other"
    moved = invoke(put_node, node_event("node-a", takeover, f"Bearer {operator.group(1)}"))
    assert moved.status == 200


def test_revoking_an_unknown_id_fails_and_creates_nothing(aws, capsys):
    code, out, err = run(capsys, "revoke", "no-such-key")
    assert (code, out) == (1, "")
    assert "no key has id no-such-key" in err
    assert state.whole_table(aws) == []


def test_list_shows_an_orgs_keys_without_any_key_or_hash(aws, capsys):
    _, first = create(capsys, "--id", "a-1")
    _, second = create(capsys, "--id", "a-2", "--permission", "reservation.capacity")
    run(capsys, "create", "--org", "org-other", "--permission", "reservation.read", "--id", "o-1")
    run(capsys, "revoke", "a-1")
    code, out, _ = run(capsys, "list", "--org", "org-acme")
    assert code == 0
    assert out.splitlines() == [
        "ID\tPERMISSIONS\tOPERATOR\tREVOKED\tEXPIRES",
        "a-1\treservation.read\tno\tyes\t-",
        "a-2\treservation.capacity,reservation.read\tno\tno\t-",
    ]
    for secret in (first, second):
        assert secret not in out
        assert hashlib.sha256(secret.encode()).hexdigest() not in out


@pytest.mark.parametrize(
    "argv",
    [
        ["create", "--org", "org acme", "--permission", "reservation.read"],
        ["create", "--org", "org-acme", "--permission", "reservation.admin"],
        ["create", "--org", "org-acme"],
        ["create", "--org", "org-acme", "--permission", "node.write", "--expires-at", "tomorrow"],
    ],
)
def test_bad_arguments_are_refused_before_anything_is_written(aws, capsys, argv):
    with pytest.raises(SystemExit) as exited:
        keys.main(argv)
    assert exited.value.code == 2
    assert state.whole_table(aws) == []

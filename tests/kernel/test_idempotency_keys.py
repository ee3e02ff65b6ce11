"""The Idempotency-Key's own rules: which headers are accepted, which answers are kept, and
for how long."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from reservations.kernel.errors import InvalidRequest
from reservations.kernel.idempotency.models import Outcome, StoredResponse
from reservations.kernel.idempotency.rules import (
    HEADER,
    check_header,
    is_kept,
    is_live,
    keyed_request,
)

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize("key", ["k", "k" * 255, " ", "~", "a b~c!"])
def test_an_idempotency_key_of_1_to_255_printable_characters_is_accepted(key):
    check_header(key)


@pytest.mark.parametrize("key", ["", "k" * 256, "tab\there", "caf\u00e9", "del\x7f"])
def test_any_other_key_is_400_naming_the_header(key):
    with pytest.raises(InvalidRequest) as refused:
        check_header(key)
    assert [d.field for d in refused.value.details] == [HEADER] == ["Idempotency-Key"]
    assert refused.value.message == "Idempotency-Key must be 1-255 printable characters"
    assert refused.value.details[0].problem == "must be 1-255 printable ASCII characters"


@pytest.mark.parametrize(
    ("status", "code", "kept"),
    [
        (200, None, True),
        (201, None, True),
        (299, None, True),
        (300, None, False),
        (400, "invalid_request", False),
        (401, "unauthorized", False),
        (404, "not_found", False),
        (409, "reservation_not_active", True),
        (409, "conflict", False),
        (422, "units_not_in_reservation", True),
        (422, "idempotency_key_reused", False),
        (500, "internal", False),
        (503, None, False),
    ],
)
def test_decisions_are_kept_and_try_again_answers_are_not(status, code, kept):
    assert is_kept(status, code) is kept


def test_a_record_is_absent_from_the_moment_it_expires():
    stored = StoredResponse("hash", Outcome(200, "{}"), NOW)
    assert is_live(stored, NOW - timedelta(microseconds=1))
    assert not is_live(stored, NOW)


def test_a_requests_fingerprint_is_the_hash_of_its_canonical_json_so_it_outlives_a_deploy():
    """Records are kept 24 hours, across deploys: the fingerprint a retry is compared with
    must be computed as the stored one was - compact JSON, keys sorted at every level."""
    keyed = keyed_request("keyhash", "retry-1", "POST", "/nodes/n/reservations",
                          {"unitIds": ["0000:04:00.0"], "dryRun": False})  # fmt: skip
    canonical = (
        '{"body":{"dryRun":false,"unitIds":["0000:04:00.0"]},'
        '"method":"POST","path":"/nodes/n/reservations"}'
    )
    assert keyed.request_hash == hashlib.sha256(canonical.encode()).hexdigest()
    assert keyed.scope == hashlib.sha256(b"keyhash\nretry-1").hexdigest()

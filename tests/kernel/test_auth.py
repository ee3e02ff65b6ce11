"""Parsing the Authorization header, key hashing and the bounded key cache."""

from datetime import UTC, datetime, timedelta

import pytest

from reservations.kernel.auth import KeyCache, authenticate, bearer_token, derive_key_id, hash_key
from reservations.kernel.caller import ApiKey
from reservations.kernel.errors import Unauthorized

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, tzinfo=UTC)
KEY = "vl_local_only_owner"


def stored(**kw) -> ApiKey:
    base = {
        "key_id": "key-1",
        "org_id": "org-acme",
        "permissions": frozenset({"reservation.read"}),
        "platform_operator": False,
    }
    base.update(kw)
    return ApiKey(**base)


def test_only_the_hash_is_looked_up():
    seen = []

    def lookup(key_hash: str) -> ApiKey:
        seen.append(key_hash)
        return stored()

    caller = authenticate(f"Bearer {KEY}", lookup, KeyCache(), NOW)
    assert caller.org_id == "org-acme"
    assert seen == [hash_key(KEY)]
    assert KEY not in seen[0]
    assert derive_key_id(KEY) != hash_key(KEY)
    assert not hash_key(KEY).startswith(derive_key_id(KEY)[4:])


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer  ", "Token vl_abc", "Bearer abc", "Bearer vl_", "Bearer vl_a b"],
)
def test_malformed_headers_are_401(header):
    with pytest.raises(Unauthorized):
        bearer_token(header)


def test_revoked_expired_and_unknown_keys_are_401():
    for api_key in (
        None,
        stored(revoked=True),
        stored(expires_at=NOW),
        stored(expires_at=NOW - timedelta(seconds=1)),
    ):
        with pytest.raises(Unauthorized):
            authenticate(f"Bearer {KEY}", lambda _h, k=api_key: k, KeyCache(), NOW)
    assert authenticate(
        f"Bearer {KEY}", lambda _h: stored(expires_at=NOW + timedelta(seconds=1)), KeyCache(), NOW
    )


def test_the_cache_bounds_revocation_to_its_ttl():
    clock = [0.0]
    cache = KeyCache(ttl=60, clock=lambda: clock[0])
    current = {"key": stored()}
    calls = []

    def lookup(_hash: str) -> ApiKey:
        calls.append(1)
        return current["key"]

    authenticate(f"Bearer {KEY}", lookup, cache, NOW)
    current["key"] = stored(revoked=True)
    clock[0] = 59.9
    authenticate(f"Bearer {KEY}", lookup, cache, NOW)  # still cached: one lookup so far
    assert len(calls) == 1
    clock[0] = 60.0
    with pytest.raises(Unauthorized):
        authenticate(f"Bearer {KEY}", lookup, cache, NOW)
    assert len(calls) == 2


def test_expiry_is_checked_on_every_request_even_when_cached():
    cache = KeyCache(ttl=60, clock=lambda: 0.0)
    api_key = stored(expires_at=NOW + timedelta(seconds=5))
    authenticate(f"Bearer {KEY}", lambda _h: api_key, cache, NOW)
    with pytest.raises(Unauthorized):
        authenticate(f"Bearer {KEY}", lambda _h: api_key, cache, NOW + timedelta(seconds=5))


def test_unknown_keys_are_not_cached():
    calls = []
    cache = KeyCache(ttl=60, clock=lambda: 0.0)
    for _ in range(2):
        with pytest.raises(Unauthorized):
            authenticate(f"Bearer {KEY}", lambda _h: calls.append(1), cache, NOW)
    assert len(calls) == 2


def test_a_keys_derived_id_is_stable_across_releases():
    # The fleet file and the keys tool store it when no id is given: the same key must name
    # the same record (and the same audit trail) after every deploy.
    assert derive_key_id(KEY) == "key-8f393fe2c29b3c91"


def test_the_cache_counts_its_ttl_from_when_the_key_was_looked_up():
    clock = [1000.0]  # a monotonic clock is far from zero
    cache = KeyCache(ttl=60, clock=lambda: clock[0])
    calls = []

    def lookup(_hash: str) -> ApiKey:
        calls.append(1)
        return stored()

    for now in (1000.0, 1059.9):
        clock[0] = now
        authenticate(f"Bearer {KEY}", lookup, cache, NOW)
    assert len(calls) == 1
    clock[0] = 1060.0
    authenticate(f"Bearer {KEY}", lookup, cache, NOW)
    assert len(calls) == 2

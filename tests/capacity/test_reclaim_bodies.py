"""Hostile reclaim bodies: every one is a 400 naming the field (or ``body``), never a crash,
and none costs more than linear work to refuse."""

from __future__ import annotations

import base64
import json
import string
from typing import Any

import pytest

from reservations.capacity.models import parse_capacity_request
from reservations.kernel import bodies as parsing
from reservations.kernel.bodies import MAX_BODY_BYTES, RawBody
from reservations.kernel.errors import InvalidRequest
from reservations.lifecycle.models import parse_create_request
from reservations.workloads.models import parse_place_request

pytestmark = pytest.mark.disable_socket

UNIT = "0000:04:00.0"


def rejection(raw: RawBody) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        parse_capacity_request(raw)
    assert caught.value.status == 400
    assert caught.value.code == "invalid_request"
    return caught.value


def fields(error: InvalidRequest) -> list[str]:
    return [problem.field for problem in error.details]


def b64(data: bytes) -> RawBody:
    return RawBody(base64.b64encode(data).decode("ascii"), base64_encoded=True)


def padded(size: int) -> str:
    """A valid request padded with spaces to exactly ``size`` bytes."""
    body = json.dumps({"unitIds": [UNIT]})
    return body + " " * (size - len(body))


# --- size -----------------------------------------------------------------------------------


@pytest.mark.parametrize("encode", [RawBody, lambda text: b64(text.encode())])
def test_a_body_of_exactly_64_kib_is_read(encode: Any) -> None:
    assert parse_capacity_request(encode(padded(MAX_BODY_BYTES))).unit_ids == [UNIT]


@pytest.mark.parametrize("encode", [RawBody, lambda text: b64(text.encode())])
def test_one_byte_more_is_400_naming_body(encode: Any) -> None:
    error = rejection(encode(padded(MAX_BODY_BYTES + 1)))
    assert fields(error) == ["body"]
    assert "65536 bytes" in error.details[0].problem


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    # 21,846 characters, 65,538 bytes: over the limit although far fewer characters.
    body = json.dumps({"unitIds": [UNIT], "reason": "\u20ac" * 21_846}, ensure_ascii=False)
    assert len(body) < MAX_BODY_BYTES < len(body.encode())
    assert fields(rejection(RawBody(body))) == ["body"]
    assert fields(rejection(b64(body.encode()))) == ["body"]


# --- encodings ------------------------------------------------------------------------------


def test_a_base64_body_is_decoded() -> None:
    raw = b64(json.dumps({"unitIds": [UNIT], "reason": "caf\u00e9"}).encode())
    assert parse_capacity_request(raw).reason == "caf\u00e9"


@pytest.mark.parametrize(
    "text",
    ["{not base64}", "abc", "YWJj ZA==", "eyJ1bml0SWRzIjpbXX0=\n", "\u00e9\u00e9\u00e9\u00e9"],
)
def test_not_base64_where_marked_is_400_naming_body(text: str) -> None:
    error = rejection(RawBody(text, base64_encoded=True))
    assert fields(error) == ["body"]
    assert "base64" in error.details[0].problem


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe{}",
        b'{"unitIds": ["0000:04:00.0"], "reason": "\xe9"}',  # Latin-1, not UTF-8
        b'{"unitIds": ["0000:04:00.0"], "reason": "\xed\xa0\x80"}',  # an encoded surrogate
        b'{"unitIds": ["0000:04:00.0"], "reason": "\xc0\xaf"}',  # overlong
    ],
)
def test_not_utf8_is_400_naming_body(data: bytes) -> None:
    error = rejection(b64(data))
    assert fields(error) == ["body"]
    assert "UTF-8" in error.details[0].problem


def test_text_that_cannot_be_utf8_is_400_naming_body() -> None:
    error = rejection(RawBody('{"unitIds": ["0000:04:00.0"], "reason": "\ud800"}'))
    assert fields(error) == ["body"]


# --- linear work ----------------------------------------------------------------------------


class CountingKey(str):
    """A key that counts how often it is compared or hashed."""

    calls = 0

    def __eq__(self, other: object) -> bool:
        CountingKey.calls += 1
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        CountingKey.calls += 1
        return str.__hash__(self)


def test_the_duplicate_key_check_touches_each_key_a_bounded_number_of_times() -> None:
    """A complexity guard, counted rather than timed so that it cannot flake: with n distinct
    keys a linear check compares or hashes each a constant number of times (about 2n in all);
    the old ``keys.count`` check compared every pair (n * n, here a million)."""
    n = 1000
    CountingKey.calls = 0
    parsing._no_duplicate_keys([(CountingKey(f"k{i}"), 0) for i in range(n)])
    assert CountingKey.calls <= 4 * n


def most_keys_in_64_kib() -> str:
    """``{"unitIds": {...}}`` with as many distinct short keys as fit in 64 KiB."""
    alphabet = [c for c in string.printable if c.isprintable() and c not in '"\\']
    keys = alphabet + [a + b for a in alphabet for b in alphabet]
    entries, size = [], len('{"unitIds":{}}')
    for key in keys:
        entry = f'"{key}":0'
        if size + len(entry) + 1 > MAX_BODY_BYTES:
            break
        entries.append(entry)
        size += len(entry) + 1
    return '{"unitIds":{' + ",".join(entries) + "}}"


def test_the_most_distinct_keys_64_kib_can_hold_are_a_400() -> None:
    body = most_keys_in_64_kib()
    assert len(json.loads(body)["unitIds"]) > 8000
    assert fields(rejection(RawBody(body))) == ["unitIds"]


def test_thousands_of_unknown_fields_give_a_bounded_error() -> None:
    body = json.dumps({f"k{i}": 0 for i in range(5000)}, separators=(",", ":"))
    assert len(body) <= MAX_BODY_BYTES
    error = rejection(RawBody(body))
    assert len(error.details) == parsing.MAX_REPORTED_PROBLEMS
    assert "more" in error.message
    assert len(error.message) < 2000


# --- JSON as RFC 8259 has it ----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "[" * 32_000 + "]" * 32_000,
        '{"unitIds":' + "[" * 32_000 + "]" * 32_000 + "}",
        '{"a":' * 10_000 + "0" + "}" * 10_000,
    ],
)
def test_deep_nesting_is_400_naming_body(body: str) -> None:
    assert fields(rejection(RawBody(body))) == ["body"]


@pytest.mark.parametrize(
    "body",
    ['{"unitIds": 1' + "0" * 60_000 + "}", '{"dryRun": -' + "9" * 5000 + "}", "1" * 60_000],
)
def test_a_huge_integer_is_400_naming_body(body: str) -> None:
    error = rejection(RawBody(body))
    assert fields(error) == ["body"]


def test_an_ordinary_integer_in_a_field_names_the_field() -> None:
    assert fields(rejection(RawBody(f'{{"unitIds": ["{UNIT}"], "dryRun": 1}}'))) == ["dryRun"]


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    error = rejection(RawBody(f'{{"unitIds": ["{UNIT}"], "reason": {constant}}}'))
    assert fields(error) == ["body"]
    assert constant.lstrip("-") in error.details[0].problem


def test_a_lone_surrogate_escape_is_400_naming_the_field() -> None:
    error = rejection(RawBody(f'{{"unitIds": ["{UNIT}"], "reason": "ok \\ud800"}}'))
    assert fields(error) == ["reason"]


def test_a_surrogate_pair_escape_is_one_character() -> None:
    raw = RawBody(f'{{"unitIds": ["{UNIT}"], "reason": "\\ud83d\\ude80"}}')
    assert parse_capacity_request(raw).reason == "\U0001f680"


@pytest.mark.parametrize("body", ["null", "7", "-1.5", "true", '"text"', "[]", f'["{UNIT}"]'])
def test_a_body_that_is_not_an_object_is_400_naming_body(body: str) -> None:
    error = rejection(RawBody(body))
    assert fields(error) == ["body"]
    assert error.details[0].problem == "is not a JSON object"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (RawBody("{"), "request body is not valid JSON"),
        (RawBody("%%%", base64_encoded=True), "request body is not valid base64"),
        (RawBody(f'{{"unitIds": ["{UNIT}"], "reason": NaN}}'),
         "request body is not valid JSON: NaN is not a JSON value"),
    ],
)  # fmt: skip
def test_a_body_that_cannot_be_read_is_400_saying_why(raw: RawBody, message: str) -> None:
    # The error body's message is what a client's developer reads first.
    assert rejection(raw).message == message


# --- unit ids are answered lower-case -------------------------------------------------------


def test_create_and_place_answer_their_unit_ids_lower_case() -> None:
    create = parse_create_request(
        RawBody('{"unitIds": ["0000:0A:00.F"], "allowedOrgIds": ["org-lab"]}')
    )
    assert create.unit_ids == ["0000:0a:00.f"]
    place = parse_place_request(
        RawBody(
            '{"id": "vm-1", "kind": "vm", "tier": "spot", "orgId": "org-a", '
            '"unitIds": ["0000:0B:00.E"]}'
        )
    )
    assert place.unit_ids == ["0000:0b:00.e"]

"""The fixed texts of the errors a client sees: the 401's one message for every cause, the
404's, the 415's message and the field its details name (the contract: "``details`` names
``header.Content-Type``"), and the 503's, each as the error's body renders it; and the 400
for a body that cannot be read, its message and its one detail saying why, exactly."""

from __future__ import annotations

import base64
import json

import pytest

from reservations.capacity.models import parse_capacity_request
from reservations.kernel.bodies import MAX_BODY_BYTES, RawBody, is_json_media_type
from reservations.kernel.errors import (
    FieldProblem,
    InvalidRequest,
    NotFound,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from reservations.kernel.wire import error_json
from reservations.lifecycle.models import parse_create_request
from reservations.nodes.ids import normalized_unit_ids

pytestmark = pytest.mark.disable_socket


def test_unauthorized_says_one_message_whatever_the_cause() -> None:
    error = Unauthorized()
    assert (error.status, error.code) == (401, "unauthorized")
    assert error.message == str(error) == "missing or invalid API key"
    assert error.details == []
    assert json.loads(error_json(error)) == {
        "error": "missing or invalid API key",
        "code": "unauthorized",
    }


def test_not_found_says_one_message_whether_unknown_invisible_or_forbidden() -> None:
    error = NotFound()
    assert (error.status, error.code) == (404, "not_found")
    assert error.message == str(error) == "not found"
    assert json.loads(error_json(error)) == {"error": "not found", "code": "not_found"}


def test_unsupported_media_type_names_the_content_type_header() -> None:
    error = UnsupportedMediaType()
    assert (error.status, error.code) == (415, "unsupported_media_type")
    assert error.message == str(error) == "request body must be application/json"
    assert error.details == [FieldProblem("header.Content-Type", "must be application/json")]
    assert json.loads(error_json(error)) == {
        "error": "request body must be application/json",
        "code": "unsupported_media_type",
        "details": [{"field": "header.Content-Type", "problem": "must be application/json"}],
    }


def test_unavailable_is_the_contracts_5xx_asking_to_try_again() -> None:
    error = Unavailable()
    assert (error.status, error.code, error.retry_after) == (503, "internal", 2)
    assert error.message == str(error) == "the service could not answer in time; try again"
    assert error.details == []
    assert json.loads(error_json(error)) == {
        "error": "the service could not answer in time; try again",
        "code": "internal",
    }


# --- a body that cannot be read: the 400's message and its details, exactly ------------------

UNIT = "0000:04:00.0"


def _padded(size: int) -> str:
    body = json.dumps({"unitIds": [UNIT]})
    return body + " " * (size - len(body))


def _b64(data: bytes) -> RawBody:
    return RawBody(base64.b64encode(data).decode("ascii"), base64_encoded=True)


UNREADABLE = [
    (RawBody("   "), "request body is required", "body", "is empty"),
    (RawBody("{"), "request body is not valid JSON", "body", "is not valid JSON"),
    (RawBody("[]"), "request body must be a JSON object", "body", "is not a JSON object"),
    (RawBody(f'{{"unitIds": ["{UNIT}"], "reason": "a", "reason": "b"}}'),
     "field reason appears twice", "reason", "appears more than once"),
    (RawBody(f'{{"unitIds": ["{UNIT}"], "reason": NaN}}'),
     "request body is not valid JSON: NaN is not a JSON value", "body", "NaN is not a JSON value"),
    (RawBody(f'{{"unitIds": ["{UNIT}"], "dryRun": 1{"0" * 100}}}'),
     "request body has a number too long to read", "body",
     "has a number of more than 100 digits"),
    (RawBody("%%%", base64_encoded=True),
     "request body is not valid base64", "body", "is not valid base64"),
    # Characters outside the alphabet are refused, not skipped: "{}" with a space inside.
    (RawBody("e3 0=", base64_encoded=True),
     "request body is not valid base64", "body", "is not valid base64"),
    (RawBody(f'{{"unitIds": ["{UNIT}"], "reason": "\ud800"}}'),
     "request body is not valid UTF-8", "body", "is not valid UTF-8"),
    (_b64(b'{"reason": "\xe9"}'), "request body is not valid UTF-8", "body", "is not valid UTF-8"),
    (RawBody(_padded(MAX_BODY_BYTES + 1)),
     "request body is larger than 65536 bytes", "body", "is larger than 65536 bytes"),
]  # fmt: skip


def test_a_body_is_read_up_to_its_limits_and_each_one_refused_says_why() -> None:
    """One test for all (``make mutate`` runs two or three tests of each file that reaches
    the body's reading): what is refused, and, at the limits, what is not."""
    for raw, message, field, problem in UNREADABLE:
        with pytest.raises(InvalidRequest) as caught:
            parse_capacity_request(raw)
        assert (caught.value.message, caught.value.details) == (
            message,
            [FieldProblem(field, problem)],
        ), raw
    # A date that does not exist, in a create: the field named, and why.
    impossible = {
        "unitIds": [UNIT],
        "allowedOrgIds": ["org-lab"],
        "startsAt": "2027-02-30T00:00:00Z",
    }
    with pytest.raises(InvalidRequest) as caught:
        parse_create_request(RawBody(json.dumps(impossible)))
    assert caught.value.message == "invalid request: startsAt is not a valid date and time"
    assert caught.value.details == [FieldProblem("startsAt", "is not a valid date and time")]
    # Exactly 64 KiB, and a number of exactly 100 digits (refused by its field, not as a number).
    assert parse_capacity_request(RawBody(_padded(MAX_BODY_BYTES))).unit_ids == [UNIT]
    with pytest.raises(InvalidRequest) as caught:
        parse_capacity_request(RawBody(f'{{"unitIds": ["{UNIT}"], "dryRun": 1{"0" * 99}}}'))
    assert [problem.field for problem in caught.value.details] == ["dryRun"]


def test_a_body_wrong_in_many_fields_names_the_first_twenty_and_counts_the_rest() -> None:
    def message(count: int) -> str:
        body = json.dumps({"unitIds": [UNIT], **{f"k{i}": 0 for i in range(count)}})
        with pytest.raises(InvalidRequest) as caught:
            parse_capacity_request(RawBody(body))
        assert len(caught.value.details) == min(count, 20)
        return caught.value.message

    named = ", ".join(f"k{i} Extra inputs are not permitted" for i in range(20))
    assert message(20) == f"invalid request: {named}"
    assert message(23) == f"invalid request: {named} (and 3 more)"


def test_a_unit_id_that_is_no_pci_address_is_named_with_the_form_it_must_take() -> None:
    with pytest.raises(InvalidRequest) as caught:
        normalized_unit_ids([UNIT, "gpu-0"])
    assert caught.value.details == [
        FieldProblem("unitIds[1]", "must be a PCI address dddd:bb:dd.f in hex")
    ]


def test_json_is_application_json_whatever_its_parameters_and_case() -> None:
    for declared in (None, "application/json", "Application/JSON ; charset=UTF-8",
                     "application/json;charset=utf-8;profile=x"):  # fmt: skip
        assert is_json_media_type(declared), declared
    for declared in ("text/plain", "application/json-seq", "text/plain; x=application/json"):
        assert not is_json_media_type(declared), declared

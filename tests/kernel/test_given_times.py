"""The one rule for a time a client or a fleet file gives: RFC 3339 with an offset, whose
UTC value falls within the years 1970-9999, and a term of at least one second. Every place
that reads such a time (create, the fleet file, a key's expiry) answers by it, naming the
field, never with a crash."""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from devstack import fleet_documents as f
from reservations.kernel.bodies import RawBody
from reservations.kernel.errors import InvalidRequest
from reservations.kernel.times import NOT_RFC3339, OUT_OF_RANGE, parse_given_time, term_problem
from reservations.lifecycle.models import parse_create_request
from reservations.lifecycle.rules.term import new_term
from reservations_tools import keys
from reservations_tools.fleet.loader import main

pytestmark = pytest.mark.disable_socket

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
OUTSIDE = [
    "9999-12-31T23:59:59-01:00",  # year 10000 in UTC
    "0001-01-01T00:00:00+01:00",  # year 0 in UTC
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:30:00+01:00",  # 1969 in UTC
]
INSIDE = {
    "1970-01-01T00:00:00Z": datetime(1970, 1, 1, tzinfo=UTC),
    "9999-12-31T23:59:59Z": datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC),
    "9999-12-31T23:59:59+01:00": datetime(9999, 12, 31, 22, 59, 59, tzinfo=UTC),
    "2027-01-01t00:00:00.5z": datetime(2027, 1, 1, 0, 0, 0, 500000, tzinfo=UTC),
}


@pytest.mark.parametrize("text", OUTSIDE)
def test_a_time_outside_the_years_1970_to_9999_in_utc_is_refused_as_such(text):
    with pytest.raises(ValueError, match="1970-9999"):
        parse_given_time(text)


@pytest.mark.parametrize(("text", "utc"), INSIDE.items())
def test_a_time_inside_them_reads_as_its_utc_value(text, utc):
    assert parse_given_time(text) == utc


NO_DATE = "is not a valid date and time"


@pytest.mark.parametrize(("text", "says"), [
    ("2027-01-01T00:00:00", NOT_RFC3339), ("2027-01-01", NOT_RFC3339), ("tomorrow", NOT_RFC3339),
    ("2027-02-30T00:00:00Z", NO_DATE), ("2027-01-01T24:00:00Z", NO_DATE),
])  # fmt: skip
def test_what_is_not_a_real_rfc_3339_time_is_refused_saying_so(text, says):
    with pytest.raises(ValueError, match=f"^{re.escape(says)}$"):
        parse_given_time(text)


def _create(**times: str) -> InvalidRequest:
    body = {"unitIds": ["0000:04:00.0"], "allowedOrgIds": ["org-lab"], **times}
    with pytest.raises(InvalidRequest) as refused:
        _term(body)
    return refused.value


def _term(body: dict[str, object]) -> tuple[datetime, datetime | None]:
    return new_term(*parse_create_request(RawBody(json.dumps(body))).term(), NOW)


@pytest.mark.parametrize("text", OUTSIDE)
@pytest.mark.parametrize("field", ["startsAt", "endsAt"])
def test_create_refuses_a_time_outside_the_years_naming_the_field(field, text):
    refused = _create(**{field: text})
    assert [(d.field, d.problem) for d in refused.details] == [(field, OUT_OF_RANGE)]


def test_create_takes_the_last_second_of_year_9999():
    body = {"unitIds": ["0000:04:00.0"], "allowedOrgIds": ["org-lab"],
            "endsAt": "9999-12-31T23:59:59Z"}  # fmt: skip
    request = parse_create_request(RawBody(json.dumps(body)))
    assert new_term(*request.term(), NOW)[1] == INSIDE["9999-12-31T23:59:59Z"]


@pytest.mark.parametrize(
    ("starts", "ends"),
    [
        ("2027-01-01T00:00:00.2Z", "2027-01-01T00:00:00.7Z"),  # the same second
        ("2027-01-01T00:00:00.9Z", "2027-01-01T00:00:01.1Z"),  # two seconds, 0.2 s apart
        ("2027-01-01T00:00:00Z", "2027-01-01T00:00:00.999999999Z"),
    ],
)
def test_a_term_shorter_than_a_second_is_refused_saying_so(starts, ends):
    refused = _create(startsAt=starts, endsAt=ends)
    assert [d.field for d in refused.details] == ["endsAt"]
    assert refused.details[0].problem == (
        "must be at least 1 second after startsAt (times are kept to the second)"
    )
    assert "at least 1 second after startsAt" in refused.message


def test_a_term_of_one_second_is_kept_as_one_second():
    body = {"unitIds": ["0000:04:00.0"], "allowedOrgIds": ["org-lab"],
            "startsAt": "2027-01-01T00:00:00.5Z", "endsAt": "2027-01-01T00:00:01.5Z"}  # fmt: skip
    starts, ends = new_term(*parse_create_request(RawBody(json.dumps(body))).term(), NOW)
    assert (starts, ends) == (datetime(2027, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, 0, 0, 1,
                                                                         tzinfo=UTC))  # fmt: skip


def test_an_end_at_or_before_the_start_is_still_after_startsat():
    assert term_problem(NOW, NOW) == "must be after startsAt"
    assert term_problem(NOW, NOW - timedelta(days=1)) == "must be after startsAt"
    assert term_problem(NOW, NOW + timedelta(seconds=1)) is None


def _refusal(starts: datetime | None, ends: datetime | None) -> tuple[str, list[tuple[str, str]]]:
    with pytest.raises(InvalidRequest) as refused:
        new_term(starts, ends, NOW)
    return refused.value.message, [(d.field, d.problem) for d in refused.value.details]


def test_a_start_more_than_5_minutes_past_is_refused_naming_startsat():
    assert _refusal(NOW - timedelta(minutes=5, seconds=1), None) == (
        "startsAt is more than 5 minutes in the past",
        [("startsAt", "must not be more than 5 minutes in the past")],
    )
    exactly = NOW - timedelta(minutes=5)  # 5 minutes is not more than 5 minutes
    assert new_term(exactly, None, NOW) == (exactly, None)


@pytest.mark.parametrize("ends", [NOW, NOW - timedelta(minutes=1)])
def test_a_term_over_by_now_is_refused_naming_endsat(ends):
    assert _refusal(NOW - timedelta(minutes=2), ends) == (
        "endsAt is not in the future",
        [("endsAt", "must be in the future")],
    )


def test_a_term_ending_a_second_from_now_is_taken():
    starts = NOW - timedelta(minutes=2)
    assert new_term(starts, NOW + timedelta(seconds=1), NOW) == (
        starts,
        NOW + timedelta(seconds=1),
    )


# --- the fleet file ---------------------------------------------------------------------------


def _fleet_with(tmp_path, change) -> str:
    document = f.fleet([f.node("node-a", [f.unit("0000:04:00.0")],
                               [f.reservation("res-1", ["0000:04:00.0"])])])  # fmt: skip
    document["apiKeys"][0]["expiresAt"] = "2030-01-01T00:00:00Z"
    change(document)
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(document))
    return str(path)


def _res(document):
    return document["nodes"][0]["reservations"][0]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: _res(d).update(endsAt=OUTSIDE[0]), "nodes[0].reservations[0].endsAt"),
        (lambda d: _res(d).update(startsAt=OUTSIDE[1]), "nodes[0].reservations[0].startsAt"),
        (lambda d: _res(d).update(createdAt=OUTSIDE[2]), "nodes[0].reservations[0].createdAt"),
        (lambda d: _res(d).update(updatedAt=OUTSIDE[3]), "nodes[0].reservations[0].updatedAt"),
        (lambda d: d["apiKeys"][0].update(expiresAt=OUTSIDE[0]), "apiKeys[0].expiresAt"),
    ],
)
def test_validate_names_a_fleet_time_outside_the_years(tmp_path, capsys, change, field):
    assert main(["validate", _fleet_with(tmp_path, change)]) == 1
    error = capsys.readouterr().err
    assert f"{field}: must fall within the years 1970-9999 (UTC)" in error
    assert "Traceback" not in error


def test_validate_names_a_fleet_term_shorter_than_a_second(tmp_path, capsys):
    def short(document):
        _res(document).update(startsAt="2027-01-01T00:00:00.2Z", endsAt="2027-01-01T00:00:00.7Z")

    assert main(["validate", _fleet_with(tmp_path, short)]) == 1
    assert "nodes[0].reservations[0].endsAt: must be at least 1 second after startsAt" in (
        capsys.readouterr().err
    )


# --- a key's expiry ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", OUTSIDE)
def test_a_keys_expiry_outside_the_years_is_refused_naming_it(text):
    with pytest.raises(argparse.ArgumentTypeError, match="1970-9999"):
        keys._moment(text)

"""If-Match and If-None-Match as a client sends them (RFC 9110's grammar): ``*``, a list of
strong and weak tags, and everything else a 400 naming the header, read in one linear pass;
how a parsed header compares with the current tag (If-Match strongly, If-None-Match weakly);
and the ETag header an answer carries."""

from __future__ import annotations

import pytest

from reservations.kernel.errors import ERRORS, InvalidRequest, PreconditionFailed
from reservations.kernel.http.resolver import error_headers
from reservations.kernel.preconditions import (
    MAX_HEADER,
    EntityTags,
    etag_header,
    parse_entity_tags,
    parse_if_match,
    parse_if_none_match,
    quoted,
)

pytestmark = pytest.mark.disable_socket


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("*", EntityTags(any=True)),
        (" * ", EntityTags(any=True)),
        ('"a1"', EntityTags(strong=frozenset({"a1"}))),
        ('"a1", "b2"', EntityTags(strong=frozenset({"a1", "b2"}))),
        ('"a1",W/"b2"', EntityTags(strong=frozenset({"a1"}), weak=frozenset({"b2"}))),
        ('W/"b2"', EntityTags(weak=frozenset({"b2"}))),
        ('\t"a1" ,, "b2",', EntityTags(strong=frozenset({"a1", "b2"}))),  # empty elements
        ('""', EntityTags(strong=frozenset({""}))),
        ('"a,b"', EntityTags(strong=frozenset({"a,b"}))),  # a comma is a tag's character
    ],
)
def test_a_well_formed_header_is_read_as_its_tags(header, expected):
    assert parse_entity_tags(header) == expected
    assert parse_if_match(header) == expected
    assert parse_if_none_match(header) == expected


@pytest.mark.parametrize(
    "header",
    [
        "",
        " ",
        ",",
        "a1",  # unquoted
        '"a1',  # unterminated
        'a"1"',
        '"a1" "b2"',  # no comma between
        'w/"a1"',  # the weak mark is case-sensitive
        'W/ "a1"',
        '"a 1"',  # a space is no tag character
        '"a\u00e91"',  # nor is anything beyond ASCII
        '"a1", *',  # * stands alone
        "**",
        '"' + "a" * MAX_HEADER + '"',
    ],
)
def test_a_malformed_if_match_is_a_400_naming_the_header(header):
    with pytest.raises(InvalidRequest) as refused:
        parse_if_match(header)
    assert refused.value.status == 400
    assert [d.field for d in refused.value.details] == ["If-Match"]


@pytest.mark.parametrize("header", ["", "a1", '"a1" "b2"', 'W/ "x"'])
def test_a_malformed_if_none_match_is_no_condition(header):
    # A read never fails for a condition it cannot evaluate: it answers in full.
    assert parse_if_none_match(header) is None


def test_no_header_is_no_condition():
    assert parse_if_match(None) is None
    assert parse_if_none_match(None) is None


def test_if_match_compares_strongly_and_star_matches_any_existing_version():
    assert parse_entity_tags('"a1", "b2"').matches("b2")
    assert not parse_entity_tags('"a1"').matches("b2")
    assert not parse_entity_tags('W/"b2"').matches("b2")  # a weak tag never matches
    assert parse_entity_tags("*").matches("anything")
    assert not parse_entity_tags("*").matches(None)  # nothing exists
    assert not parse_entity_tags('"a1"').matches(None)


def test_if_none_match_compares_weakly():
    assert parse_entity_tags('W/"b2"').matches_weakly("b2")
    assert parse_entity_tags('"b2"').matches_weakly("b2")
    assert parse_entity_tags("*").matches_weakly("b2")
    assert not parse_entity_tags('"a1", W/"a2"').matches_weakly("b2")
    assert not parse_entity_tags("*").matches_weakly(None)


def test_a_long_list_is_read_whole_and_one_bad_element_anywhere_refuses_it():
    many = ", ".join(f'"t{i}"' for i in range(400))
    assert parse_if_match(many) == EntityTags(strong=frozenset(f"t{i}" for i in range(400)))
    with pytest.raises(InvalidRequest):
        parse_if_match(many + ", t400")
    with pytest.raises(InvalidRequest):
        parse_if_match(",  " * 1300 + "x")


def test_the_etag_header_quotes_the_tag_and_refuses_what_no_tag_may_hold():
    assert etag_header("0a1b") == ("ETag", '"0a1b"')
    assert quoted("") == '""'
    with pytest.raises(ValueError, match="entity tag"):
        quoted('a"b')


def test_a_412_carries_the_current_etag_is_never_kept_and_sits_between_409_and_422():
    refused = PreconditionFailed(etag_header("c3"))
    assert (refused.status, refused.code, refused.kept) == (412, "precondition_failed", False)
    assert error_headers(refused) == {"ETag": '"c3"'}
    order = [(error.status, error.code) for error in ERRORS]
    at = order.index((412, "precondition_failed"))
    assert order[at - 1][0] == 409
    assert order[at + 1][0] == 422

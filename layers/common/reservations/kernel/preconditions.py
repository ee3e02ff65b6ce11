"""Versions as HTTP shows them: a resource's strong ``ETag``, and the conditional headers a
client sends with it, ``If-Match`` (a write acts only on the version it names) and
``If-None-Match`` (a read answers 304 while the version is the one the client holds).

A tag here is the opaque text between the quotes; what it is made of is the slice's own.
The write pipeline (``kernel.pipeline``) checks a parsed ``If-Match`` against the tag its
spec reads from the partition it read.

The headers are parsed by RFC 9110's grammar in one pass, linear in their length: ``*``
alone, or a comma-separated list of entity tags, each ``"…"`` (strong) or ``W/"…"``
(weak) of the characters ``!`` and ``#``-``~``; empty list elements are ignored, spaces
and tabs around elements allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from reservations.kernel.errors import FieldProblem, InvalidRequest

IF_MATCH = "If-Match"
IF_NONE_MATCH = "If-None-Match"
ETAG = "ETag"
# A header longer than this is no list of tags a client holds (API Gateway caps headers
# at 10 KB anyway): a 400 before it is scanned.
MAX_HEADER = 4096

# One list element: optional spaces, an optional entity tag, optional spaces.
_ELEMENT = re.compile(r'[ \t]*(?:(W/)?"([\x21\x23-\x7e]*)")?[ \t]*')
_TAG = re.compile(r"[\x21\x23-\x7e]*")


@dataclass(frozen=True)
class EntityTags:
    """A parsed ``If-Match`` or ``If-None-Match``: ``*`` (any current version), or the
    tags listed, strong and weak apart."""

    any: bool = False
    strong: frozenset[str] = frozenset()
    weak: frozenset[str] = frozenset()

    def matches(self, current: str | None) -> bool:
        """``If-Match``'s strong comparison: ``*`` matches any existing resource, a strong
        tag its own version only, a weak tag never. ``current`` None: nothing exists."""
        if current is None:
            return False
        return self.any or current in self.strong

    def matches_weakly(self, current: str | None) -> bool:
        """``If-None-Match``'s weak comparison: ``W/"x"`` and ``"x"`` both name ``x``."""
        if current is None:
            return False
        return self.any or current in self.strong or current in self.weak


def quoted(tag: str) -> str:
    """The tag as the ``ETag`` header carries it: strong, in double quotes."""
    if _TAG.fullmatch(tag) is None:
        raise ValueError(f"not an entity tag's characters: {tag!r}")
    return f'"{tag}"'


def etag_header(tag: str) -> tuple[str, str]:
    """The ``ETag`` header of an answer carrying the resource at version ``tag``."""
    return (ETAG, quoted(tag))


def parse_entity_tags(header: str, name: str = IF_MATCH) -> EntityTags:
    """The header ``name`` as sent; 400 ``invalid_request`` naming it when it is not ``*``
    nor a list of at least one entity tag."""
    if len(header) > MAX_HEADER:
        _malformed(name, f"at most {MAX_HEADER} characters")
    if header.strip(" \t") == "*":
        return EntityTags(any=True)
    strong: set[str] = set()
    weak: set[str] = set()
    position = 0
    while True:
        element = _ELEMENT.match(header, position)
        assert element is not None  # every part of it is optional
        if element.group(2) is not None:
            (weak if element.group(1) else strong).add(element.group(2))
        position = element.end()
        if position == len(header):
            break
        if header[position] != ",":
            _malformed(name, f'must be * or a comma-separated list of "tags"; at {position}')
        position += 1
    if not strong and not weak:
        _malformed(name, 'must be * or a comma-separated list of "tags"')
    return EntityTags(strong=frozenset(strong), weak=frozenset(weak))


def parse_if_match(header: str | None) -> EntityTags | None:
    """``If-Match`` as sent, None without one; a malformed one is a 400 naming it."""
    return None if header is None else parse_entity_tags(header, IF_MATCH)


def parse_if_none_match(header: str | None) -> EntityTags | None:
    """``If-None-Match`` as sent; None without one, and for one that is malformed: a read
    that cannot tell which versions the client holds answers in full (RFC 9110 lets a
    server ignore a condition it cannot evaluate; a GET never fails for it)."""
    if header is None:
        return None
    try:
        return parse_entity_tags(header, IF_NONE_MATCH)
    except InvalidRequest:
        return None


def _malformed(name: str, problem: str) -> NoReturn:
    raise InvalidRequest(f"{name} is malformed", [FieldProblem(name, problem)])

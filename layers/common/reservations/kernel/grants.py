"""What a function may do in AWS, declared with the code that does it: one statement of its
least privileges each (its ``Sid``, actions, the resource and, on the table, the partition-key
patterns it is scoped to), and why. An endpoint's declaration lists its own; the template's
function block is made from them (the resources' names are the template generator's). The
grants every endpoint's function needs are here: the caller's key read, and, for a write
that keeps an Idempotency-Key, its records."""

from __future__ import annotations

from dataclasses import dataclass

TABLE = "table"  # the one table; "index/<Name>": one of its indexes


@dataclass(frozen=True, kw_only=True)
class Grant:
    """One IAM statement: ``actions`` on ``on``, scoped on the table to the items whose
    partition key matches one of ``keys`` (``dynamodb:LeadingKeys``)."""

    sid: str
    actions: tuple[str, ...]
    keys: tuple[str, ...] = ()
    on: str = TABLE
    why: str = ""


READ_API_KEYS = Grant(sid="ReadApiKeys", actions=("dynamodb:GetItem",), keys=("APIKEY#*",))
READ_KEY_RECORDS = Grant(
    sid="ReadIdempotencyRecords",
    actions=("dynamodb:GetItem", "dynamodb:ConditionCheckItem"),
    keys=("IDEMPOTENCY#*",),
    why="A write's Idempotency-Key: its record read, and checked in the write's transaction.",
)
WRITE_KEY_RECORDS = Grant(
    sid="WriteIdempotencyRecords",
    actions=("dynamodb:PutItem",),
    keys=("IDEMPOTENCY#*",),
    why="... and put, in the same transaction as the write it answers.",
)

"""The release and reclaim body, and what a reclaim answers: the reservation after it, and
what it did (or, in a dry run, would do) to the workloads on the units."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, Field, StrictBool, StrictStr

from reservations.kernel.bodies import (
    MAX_REASON,
    JsonInt,
    RawBody,
    StrictBody,
    invalid_body,
    required_body,
)
from reservations.kernel.errors import FieldProblem
from reservations.kernel.wire import Timestamp, WireModel
from reservations.lifecycle import ReservationView
from reservations.nodes import (
    MAX_UNITS,
    LendingPolicy,
    UnitIds,
    normalized_unit_ids,
    unit_ids_field,
)

# What the demo fleet's reclaims answer (README.md): the reservation's own example, and what
# the reclaim did.
_RECLAIMED = {
    "workloadId": "vm-17",
    "terminationId": "term-7f3k",
    "terminateAt": "2026-11-30T08:17:00.318Z",
}

# The longest notice a reclaim may give its spot workloads, in seconds.
MAX_NOTICE_SECONDS = 3600


class ReclaimTermination(WireModel):
    """A workload a real run counts as terminated, and its own deadline."""

    EXAMPLES: ClassVar[list[Any]] = [_RECLAIMED]

    workload_id: str
    termination_id: str
    terminate_at: Timestamp = Field(
        description="its deadline (to the millisecond): the latest of this call's terminateAt "
        "and what the workload was promised at its placement (the commit plus its "
        "promisedNoticeSeconds, its createdAt plus its promisedMinRunSeconds); for one already "
        "terminating, the earlier of its own and that, never before its promises"
    )


class ReclaimResponse(ReservationView):
    """The reservation after the reclaim, plus what was (or, dry run, would be) done."""

    EXAMPLES: ClassVar[list[Any]] = [
        {
            **ReservationView.EXAMPLES[0],
            "releasedUnitIds": [],
            "terminated": ["vm-17"],
            "skipped": ["vm-21"],
            "reclaimedUnitIds": ["0000:04:00.0"],
            "terminateAt": "2026-11-30T08:17:00.318Z",
            "terminations": [_RECLAIMED],
        },
        {
            **ReservationView.EXAMPLES[0],
            "wouldTerminate": ["vm-17"],
            "wouldSkip": [],
            "reclaimedUnitIds": ["0000:04:00.0"],
            "planId": "eyJ4IjoxNzk2NTU2NDAwMDAwfQ.c2lnbmF0dXJl",
            "planExpiresAt": "2026-11-29T12:05:00Z",
        },
    ]

    terminated: list[str] | None = Field(default=None, description="real run: workload ids")
    skipped: list[str] | None = Field(default=None, description="real run: not spot, left running")
    would_terminate: list[str] | None = Field(default=None, description="dry run")
    would_skip: list[str] | None = Field(default=None, description="dry run")
    reclaimed_unit_ids: list[str] = Field(
        description="the units reclaimed (dry run: that would be), sorted: the named ones, or "
        "those chosen by count or by the plan"
    )
    plan_id: str | None = Field(
        default=None,
        description='dry run: the plan, opaque and signed; POST it back as {"planId": ...} '
        "to do exactly this reclaim, while nothing it is bound to changes",
    )
    plan_expires_at: Timestamp | None = Field(
        default=None, description="dry run: until when the plan may be applied (5 minutes)"
    )
    terminate_at: Timestamp | None = Field(
        default=None,
        description="real run: this call's deadline, its commit plus the larger of "
        "noticeSeconds and the reservation's lending policy's noticeSeconds (to the "
        "millisecond); each terminated workload has its own in terminations, which may be "
        "later",
    )
    terminations: list[ReclaimTermination] | None = Field(
        default=None,
        description="real run: each workload in terminated (by id) with its terminationId and "
        "its own terminateAt",
    )


class CapacityRequest(StrictBody):
    """The body of release and reclaim: which units, a dry run or not, why."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"unitIds": ["0000:04:00.0", "0000:05:00.0"], "dryRun": True},
                {"unitIds": ["0000:04:00.0"], "reason": "the lab needs its GPUs back"},
            ]
        },
    )

    unit_ids: UnitIds = unit_ids_field(
        "PCI addresses dddd:bb:dd.f (hex, compared case-insensitively), no duplicates"
    )
    dry_run: StrictBool = Field(default=False, alias="dryRun")
    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON)


def _normalized(request: CapacityRequest) -> CapacityRequest:
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})


def parse_capacity_request(raw: RawBody) -> CapacityRequest:
    """The validated release body, unit ids normalised; 400 naming the field."""
    return _normalized(required_body(raw, CapacityRequest))


# Far above any plan the service makes (32 units and 32 workloads take about 2 KB): a longer
# one is refused before any decoding work.
MAX_PLAN_ID = 4096

# The three ways to name what a reclaim takes back: exactly one of them.
_WAYS = ("unitIds", "count", "planId")
_UNIQUE: dict[str, Any] = {"uniqueItems": True}
_PLAN_FIELDS = frozenset({"plan_id", "reason"})


def _one_way_only(schema: dict[str, Any]) -> None:
    """The schema says what the parser enforces: exactly one of ``unitIds``, ``count`` and
    ``planId``; a plan takes ``reason`` and nothing else."""
    for way in _WAYS:  # each is absent or given, never null
        field = schema["properties"][way]
        [given] = [option for option in field.pop("anyOf") if option != {"type": "null"}]
        field.pop("default", None)
        field.update(given)
    # JSON Schema's words for the bounds pydantic leaves as its own inside the union.
    count = schema["properties"]["count"]
    count["minimum"], count["maximum"] = count.pop("ge"), count.pop("le")
    # Beside a plan, nothing but reason: every other field the body takes (dryRun, and any
    # added later) is named here from the schema itself.
    beside = [name for name in schema["properties"] if name not in (*_WAYS, "reason")]
    schema["oneOf"] = [
        {"required": ["unitIds"]},
        {"required": ["count"]},
        {"required": ["planId"], "not": {"anyOf": [{"required": [name]} for name in beside]}},
    ]
    schema["examples"] = [
        {"unitIds": ["0000:04:00.0", "0000:05:00.0"], "dryRun": True},
        {"count": 2, "noticeSeconds": 120, "dryRun": True},
        {"unitIds": ["0000:04:00.0"], "noticeSeconds": 120, "reason": "lab at noon"},
        {"planId": "eyJ4IjoxNzk2NTU2NDAwMDAwfQ.c2lnbmF0dXJl", "reason": "the lab needs them"},
    ]


class ReclaimRequest(StrictBody):
    """The reclaim body, one of three shapes: the units by id (``unitIds``), how many of the
    released units (``count``: the service chooses), either with the notice its spot
    workloads get (``noticeSeconds``), or a dry run's plan (``planId``, with an optional
    ``reason`` and nothing else: the plan carries its dry run's notice)."""

    model_config = ConfigDict(json_schema_extra=_one_way_only)

    unit_ids: (
        Annotated[UnitIds, Field(min_length=1, max_length=MAX_UNITS, json_schema_extra=_UNIQUE)]
        | None
    ) = Field(
        default=None,
        alias="unitIds",
        description="PCI addresses dddd:bb:dd.f (hex, compared case-insensitively), no "
        "duplicates; or count, or planId",
    )
    count: Annotated[JsonInt, Field(ge=1, le=MAX_UNITS)] | None = Field(
        default=None,
        description="how many released units to reclaim, chosen by the service; a real run "
        "needs an Idempotency-Key or an If-Match",
    )
    plan_id: Annotated[StrictStr, Field(min_length=1, max_length=MAX_PLAN_ID)] | None = Field(
        default=None,
        alias="planId",
        description="a dry run's plan: do exactly it (only reason may come with it)",
    )
    notice_seconds: JsonInt = Field(
        default=0,
        alias="noticeSeconds",
        ge=0,
        le=MAX_NOTICE_SECONDS,
        # Out of the body's Idempotency-Key fingerprint when 0: a reclaim without notice is
        # the request it was before the field existed (its records outlive a deploy).
        exclude_if=lambda seconds: seconds == 0,
        description="seconds the spot workloads get before the node stops them (their "
        "terminateAt); the units leave releasedUnitIds at once. With unitIds or count; a "
        "plan carries the notice of its dry run",
    )
    dry_run: StrictBool = Field(default=False, alias="dryRun")
    reason: StrictStr | None = Field(default=None, max_length=MAX_REASON)

    @property
    def wants_key(self) -> bool:
        """A real run by count takes more each time it is sent: not safe without a key."""
        return self.count is not None and not self.dry_run


def parse_reclaim_request(raw: RawBody) -> ReclaimRequest:
    """The validated reclaim body, unit ids normalised; 400 naming the fields when it names
    its units in none or several of the three ways, or a plan comes with anything but
    ``reason``."""
    request = required_body(raw, ReclaimRequest)
    nulls = {"unit_ids": "unitIds", "count": "count", "plan_id": "planId"}
    if given_null := [
        name
        for field, name in nulls.items()
        if field in request.model_fields_set and getattr(request, field) is None
    ]:
        raise invalid_body([FieldProblem(name, "must not be null") for name in given_null])
    given = [
        way
        for way, value in zip(
            _WAYS, (request.unit_ids, request.count, request.plan_id), strict=True
        )
        if value is not None
    ]
    if len(given) != 1:
        raise invalid_body(
            [
                FieldProblem(way, "give exactly one of unitIds, count and planId")
                for way in (given or _WAYS)
            ]
        )
    # A plan is done as it was planned: whatever else the body may take (dryRun, and any
    # field added later) is refused beside it, given or not at its default.
    if request.plan_id is not None and (beside := request.model_fields_set - _PLAN_FIELDS):
        fields = ReclaimRequest.model_fields
        raise invalid_body(
            [
                FieldProblem(fields[name].alias or name, "a plan takes only reason beside planId")
                for name in sorted(beside)
            ]
        )
    if request.unit_ids is None:
        return request
    return request.model_copy(update={"unit_ids": normalized_unit_ids(request.unit_ids)})


def reclaim_document(request: ReclaimRequest) -> object:
    """The body as an Idempotency-Key compares it: the validated body, with the ways it did
    not take left out and a notice of 0 left out (``exclude_if``), so that a ``unitIds`` body
    keeps the fingerprint it had before ``count``, ``planId`` and ``noticeSeconds`` existed
    (a key's record outlives a deploy)."""
    document = request.model_dump(mode="json", by_alias=True)
    return {
        name: value for name, value in document.items() if name not in _WAYS or value is not None
    }


class LendingPolicyRequest(StrictBody):
    """The body of ``PUT .../lending``: the whole policy (an omitted field takes its
    default)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {"auto": True, "idleSeconds": 900, "noticeSeconds": 120, "minRunSeconds": 600},
                {"auto": False, "noticeSeconds": 300, "keepUnlent": 1},
            ]
        },
    )

    auto: StrictBool = Field(description="lend idle units, and keep them lent, by itself")
    idle_seconds: JsonInt = Field(
        default=900,
        alias="idleSeconds",
        ge=60,
        le=86400,
        description="how long a unit stays idle before it is lent",
    )
    keep_unlent: JsonInt = Field(
        default=0,
        alias="keepUnlent",
        ge=0,
        le=MAX_UNITS,
        description="never lend a unit if fewer than this many of the reservation's units "
        "would stay unreleased (busy or not)",
    )
    notice_seconds: JsonInt = Field(
        default=0,
        alias="noticeSeconds",
        ge=0,
        le=MAX_NOTICE_SECONDS,
        description="the notice promised to every spot workload placed on its lent units",
    )
    min_run_seconds: JsonInt = Field(
        default=0,
        alias="minRunSeconds",
        ge=0,
        le=MAX_NOTICE_SECONDS,
        description="the minimum run promised to them: no reclaim stops one sooner",
    )
    relend_after_seconds: JsonInt = Field(
        default=300,
        alias="relendAfterSeconds",
        ge=0,
        le=MAX_NOTICE_SECONDS,
        description="after a unit is taken back, how long before it is lent again",
    )

    def policy(self) -> LendingPolicy:
        return LendingPolicy(**self.model_dump())


def parse_policy_request(raw: RawBody) -> LendingPolicyRequest:
    """The validated policy; 400 naming the field."""
    return required_body(raw, LendingPolicyRequest)

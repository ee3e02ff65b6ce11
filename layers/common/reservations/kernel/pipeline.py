"""One pipeline for every conditional, idempotent write, whatever the partition it reads and
commits (a spec's ``partition``, which keeps the key's records beside its writes).

A write endpoint is a :class:`WriteSpec` and a pure ``decide``: from the partition as read,
the request, the caller and the clock, a refusal (an :class:`ApiError`) or a
:class:`Decision`, the finished write and the answer. :func:`run_write` does the rest,
in the contract's order of checks:

1. the one 404 for a malformed path id or a key without the permission, before any read;
2. where the partition settles whether this org may make the call at all, its first read
   (not for the operator), and the same 404 for an org that may not, before the body;
3. 400 for the body;
4. the If-Match (400 when malformed), where the spec reads a version tag (``etag``) and
   the request is no dry run; then the Idempotency-Key (400 when malformed), unless the
   route takes none (PUT) or the request changes nothing by definition (a dry run);
5. at most ``retries.MAX_ATTEMPTS`` attempts: read (the first reuses the first read),
   decide; unless it is the 404, an If-Match that names no tag of the version read is
   412 ``precondition_failed`` before any refusal or write (the key's first answer
   replayed instead, when it has one: a retry whose first try committed); then refuse
   (a kept refusal is stored with the key, or the key's first answer replayed) or commit
   the write (with its events, where the spec's ``finish`` adds them) and the key's
   record in the same transaction; a dry run, or nothing to write, is none.
   A lost race reads and decides again; a live record of this key that cancelled the write
   is replayed.

Every outcome has its log line and metric: committed (the spec's own line and counts),
refused (``<name>Refusals``), replayed (``IdempotentReplays``), lost a race
(``<name>ConflictsRetried``), gave up (``<name>Conflicts``, 409 ``conflict``).
"""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from aws_lambda_powertools.metrics import MetricUnit
from pydantic import BaseModel

from reservations.kernel.bodies import RawBody
from reservations.kernel.caller import Caller
from reservations.kernel.errors import (
    ERRORS,
    ApiError,
    FieldProblem,
    InvalidRequest,
    NotFound,
    PreconditionFailed,
)
from reservations.kernel.idempotency import replay as idempotency
from reservations.kernel.idempotency.models import (
    AnswerRecord,
    IdempotentRequest,
    Outcome,
    StoredResponse,
)
from reservations.kernel.idempotency.rules import HEADER, is_kept
from reservations.kernel.ids import is_resource_id
from reservations.kernel.observability import logger, metrics
from reservations.kernel.ports import Ports
from reservations.kernel.preconditions import IF_MATCH, EntityTags, etag_header, parse_if_match
from reservations.kernel.retries import retried
from reservations.kernel.writes import WriteConflict

B = TypeVar("B")  # the parsed body
S = TypeVar("S")  # what the write decides from: its partition as read
W = TypeVar("W")  # the write
P = TypeVar("P", bound=Ports)  # the slice's ports
S_co = TypeVar("S_co", covariant=True)
W_contra = TypeVar("W_contra", contravariant=True)


@dataclass(frozen=True)
class Route:
    """The route a request came by: its method, its path as the contract spells it
    (``/v1/.../{id}``), and the path's ids by name."""

    method: str
    template: str
    params: Mapping[str, str]

    @property
    def path(self) -> str:
        """The request's own path: the template with its ids."""
        return self.template.format_map(self.params)


@dataclass(frozen=True)
class Request(Generic[B]):
    """A write's request as ``decide`` reads it: the route, the parsed body, and where the
    ids of what the write makes come from."""

    route: Route
    body: B
    new_id: Callable[[], str]
    new_secret: Callable[[], str]
    # The request's If-Match as parsed; None without one, for a dry run, or where the
    # spec honours none. The pipeline checks it; a ``decide`` may read it too.
    if_match: EntityTags | None = None
    # The service's signing key, for what a write hands out signed (read when first needed).
    signing_key: Callable[[], bytes] = bytes


@dataclass(frozen=True)
class Decision(Generic[W]):
    """What a write decided: the write (None: nothing to write, as for a dry run or a
    partition already as stored) and the answer, rendered once, so that a replay is the
    same bytes."""

    write: W | None
    answer: Outcome


@dataclass(frozen=True)
class Committed:
    """A committed write's log line (the pipeline adds the path's ids and who asked) and the
    metrics it counts."""

    message: str
    context: Mapping[str, object]
    counts: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Access(Generic[S]):
    """Who may make a call: the key's permission, settled before any read, and, where the
    partition's data settles it (who owns or manages what it acts on), who may on this
    partition, settled by its first read, before the body."""

    permitted: Callable[[Caller], bool]
    on_partition: Callable[[Caller, S, Route], bool] | None = None


# What the write decides from (its partition as read), the request, the caller, the clock.
Decide = Callable[[S, Request[B], Caller, datetime], ApiError | Decision[W]]
# The current version tag of what the route names, from the partition as read and the
# clock (None: there is no such thing; ``decide`` answers the 404 for it).
CurrentTag = Callable[[S, Route, datetime], str | None]


class Partition(Protocol[S_co, W_contra]):
    """Where a write reads what it decides from and commits, with the key's records."""

    def read(self, route: Route, caller: Caller) -> S_co:
        """What the write decides from, strongly consistent."""

    def commit(self, write: W_contra, answer: AnswerRecord | None) -> None:
        """All or nothing, with the key's record; WriteConflict when anything read changed."""

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        """Keep it unless a live record exists; then that record."""

    def stored_answer(self, scope: str) -> StoredResponse | None:
        """The record kept under this scope, if any (live or not)."""


class AnswerStore(Protocol[W_contra]):
    """A store that commits a partition's writes and keeps the key's records beside them."""

    def commit(self, write: W_contra, answer: AnswerRecord | None = None) -> None: ...
    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None: ...
    def stored_answer(self, scope: str) -> StoredResponse | None: ...


class StoreBacked(Generic[W]):
    """A :class:`Partition`'s writes and records, handed to its store as they are; the
    partition says only how it reads."""

    store: AnswerStore[W]

    def commit(self, write: W, answer: AnswerRecord | None) -> None:
        self.store.commit(write, answer)

    def keep_answer(self, answer: AnswerRecord) -> StoredResponse | None:
        return self.store.keep_answer(answer)

    def stored_answer(self, scope: str) -> StoredResponse | None:
        return self.store.stored_answer(scope)


def _members(annotation: object) -> set[object]:
    """The types a return annotation's unions name, flattened."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return set().union(*(_members(member) for member in typing.get_args(annotation)))
    return {annotation}


@functools.cache
def refusals_of(decide: Callable[..., object]) -> tuple[type[ApiError], ...]:
    """The errors a ``decide`` may return, by its return type, in the contract's order."""
    returned = typing.get_type_hints(decide)["return"]
    named = (m for m in _members(returned) if isinstance(m, type) and issubclass(m, ApiError))
    return tuple(sorted(named, key=ERRORS.index))


def _never(_body: object) -> bool:
    return False


def _as_validated(body: object) -> object:
    """The validated body as the key compares it: key order, whitespace and defaults aside."""
    return body.model_dump(mode="json", by_alias=True) if isinstance(body, BaseModel) else body


@dataclass(frozen=True, kw_only=True)
class Body(Generic[B]):
    """How a write reads its request: the body parsed (a 400 names each field it refuses),
    and what the Idempotency-Key and If-Match make of it."""

    parse: Callable[[RawBody], B]
    keyed: bool = True  # False: the route takes no Idempotency-Key (PUT)
    dry_run: Callable[[B], bool] = _never  # changes nothing: the key neither kept nor checked
    # Not safe to repeat by itself (each call takes more): without an Idempotency-Key or an
    # If-Match naming a version (``*`` names none), a 400 naming both.
    needs_key: Callable[[B], bool] = _never
    document: Callable[[B], object] = _as_validated  # the body as the key compares it
    # Checks of the body that need the clock, before any write (a create's term).
    timely: Callable[[B, datetime], None] | None = None


@dataclass(frozen=True, kw_only=True)
class Commit(Generic[S, W, P]):
    """Where a write reads and commits, what makes the decided write whole, and what follows
    its commit."""

    partition: Callable[[P], Partition[S, W]]  # where it reads and commits
    committed: Callable[[W], Committed]  # its log line and counts
    before: Callable[[W, P], W] | None = None  # a step before the first write
    finish: Callable[[S, W], W] | None = None  # the write made whole (its events)
    after: Callable[[S, W, P, datetime], None] | None = None  # once committed


@dataclass(frozen=True, kw_only=True)
class WriteSpec(Generic[B, S, W, P]):
    """What one write endpoint brings to the pipeline, in the order it is used: who may
    (``access``), its request (``body``), its ``decide``, and its ``commit``; the options are
    its real variations. Its refusals are declared once, in its ``decide``'s return type,
    which mypy holds the code to: :attr:`refusals` reads them, and its route's errors and
    OpenAPI responses are made from them."""

    name: str  # metrics: <name>Refusals, ...; log lines: "<name in words> refused", ...
    access: Access[S]
    body: Body[B]
    decide: Decide[S, B, W]
    commit: Commit[S, W, P]
    conflict: str  # the 409 after every attempt lost: over the path ids and ``body``
    # Where the write acts on one versioned thing: its current tag as read.
    # A spec with one honours If-Match (its route declares the header and the 412).
    etag: CurrentTag[S] | None = None
    # Refusals a committed first request explains: the key's first answer, if any, instead.
    first_answer_for: tuple[type[ApiError], ...] = ()
    # How a path id must look, by its name in the route, where it is not a resource id.
    path_ids: Mapping[str, Callable[[str], bool]] = field(default_factory=dict, hash=False)

    @property
    def keyed(self) -> bool:
        """It takes an Idempotency-Key (every write but a PUT)."""
        return self.body.keyed

    @property
    def refusals(self) -> tuple[type[ApiError], ...]:
        """Every refusal ``decide`` may return, as its return type names them."""
        return refusals_of(self.decide)

    @property
    def noun(self) -> str:
        """The name in words, as the log lines say it: ``ItemChange``, "item change"."""
        return re.sub(r"(?<!^)(?=[A-Z])", " ", self.name).lower()


def run_write(
    spec: WriteSpec[B, S, W, P],
    route: Route,
    caller: Caller,
    body: RawBody,
    idempotency_key: str | None,
    ports: P,
    if_match: str | None = None,
) -> Outcome:
    """The answer to one write: its outcome or a replay; an ApiError is raised.
    ``if_match``: the If-Match header as sent, read where the spec has an ``etag``. The
    checks in the contract's order (the module's docstring), then the attempts."""
    if not (_ids_look_right(spec, route) and spec.access.permitted(caller)):
        raise NotFound()  # 1
    partition = spec.commit.partition(ports)
    first_read = _first_read(spec, route, caller, partition)  # 2
    parsed = spec.body.parse(body)  # 3
    precondition = _precondition(spec, parsed, if_match)  # 4
    keyed = _keyed(spec, route, caller, parsed, idempotency_key, precondition)
    request = Request(
        route, parsed, ports.new_id, ports.new_secret, precondition, ports.signing_key
    )
    return _Write(spec, request, caller, keyed, ports, partition, first_read).answer()  # 5


def _ids_look_right(spec: WriteSpec[B, S, W, P], route: Route) -> bool:
    rules = spec.path_ids
    return all(rules.get(name, is_resource_id)(value) for name, value in route.params.items())


def _first_read(
    spec: WriteSpec[B, S, W, P], route: Route, caller: Caller, partition: Partition[S, W]
) -> list[S]:
    """Where the partition settles who may make the call, anyone but the operator (who may
    act on any partition) has it read now, and must be allowed on it, else the one 404
    before the body; that read serves the first attempt, so the call costs what it would
    anyway."""
    on_partition = spec.access.on_partition
    if on_partition is None or caller.platform_operator:
        return []
    first = partition.read(route, caller)
    if first is None or not on_partition(caller, first, route):
        raise NotFound()
    return [first]


def _precondition(spec: WriteSpec[B, S, W, P], body: B, header: str | None) -> EntityTags | None:
    """The If-Match to check, after the body is valid (400 when malformed); None where the
    spec reads no tag, and for a dry run, which changes nothing whatever the version."""
    if spec.etag is None or spec.body.dry_run(body):
        return None
    return parse_if_match(header)


def _keyed(
    spec: WriteSpec[B, S, W, P],
    route: Route,
    caller: Caller,
    body: B,
    header: str | None,
    precondition: EntityTags | None = None,
) -> IdempotentRequest | None:
    """The keyed request, after the body is valid; None without a key to look at. A body
    not safe to repeat needs the key or an If-Match naming a version (400 naming both)."""
    if not spec.body.keyed or spec.body.dry_run(body):
        return None
    versioned = precondition is not None and bool(precondition.strong)
    if header is None and not versioned and spec.body.needs_key(body):
        raise InvalidRequest(
            f"this request is not safe to repeat by itself: send an {HEADER} or an "
            f"{IF_MATCH} naming the reservation's ETag",
            [
                FieldProblem(HEADER, "or If-Match is required for this request"),
                FieldProblem(IF_MATCH, f"or {HEADER} is required for this request"),
            ],
        )
    return idempotency.keyed(caller, header, route.method, route.path, spec.body.document(body))


@dataclass
class _Write(Generic[B, S, W, P]):
    """One checked request's write, read from the top: its attempts (each reads, decides,
    checks the version, then refuses, answers without a write, or commits), and the key's
    first answer where a refusal is one a committed first request explains."""

    spec: WriteSpec[B, S, W, P]
    request: Request[B]
    caller: Caller
    keyed: IdempotentRequest | None
    ports: P
    partition: Partition[S, W]
    pending: list[S]  # the first attempt's read, where access took it already

    def answer(self) -> Outcome:
        spec, body = self.spec, self.request.body
        try:
            if spec.body.timely is not None:
                spec.body.timely(body, self.ports.clock())
            conflict = spec.conflict.format(body=body, **self.request.route.params)
            return retried(self.attempt, self.ports.sleep, spec.name, conflict)
        except spec.first_answer_for as refusal:
            return self.first_answer_or(refusal)

    def attempt(self) -> Outcome | None:
        """Read, decide, write once; None when a concurrent writer won and it must run
        again."""
        now = self.ports.clock()
        snapshot = (
            self.pending.pop()
            if self.pending
            else self.partition.read(self.request.route, self.caller)
        )
        decided = self.spec.decide(snapshot, self.request, self.caller, now)
        if self.request.if_match is not None and not isinstance(decided, NotFound):
            replayed = self.check_version(snapshot, now)
            if replayed is not None:
                return replayed
        if isinstance(decided, ApiError):
            return self.refuse(decided, now)
        if decided.write is None:
            return self.unwritten(decided.answer, now)
        return self.commit(snapshot, decided.write, decided.answer, now)

    def check_version(self, snapshot: S, now: datetime) -> Outcome | None:
        """None when the request's If-Match names the version read; else the key's live
        first answer (its first try committed, and so changed the version), or 412 raised
        with the current ETag, never kept. Only then is the key's record read: one
        GetItem."""
        spec, precondition = self.spec, self.request.if_match
        assert spec.etag is not None
        assert precondition is not None
        current = spec.etag(snapshot, self.request.route, now)
        if current is None:  # decide found it; a spec whose tag disagrees answers the 404
            raise NotFound()
        if precondition.matches(current):
            return None
        replayed = idempotency.first_answer(self.keyed, self.partition.stored_answer, now)
        if replayed is not None:
            return replayed
        self._refused_metric(PreconditionFailed.code, kept=False)
        raise PreconditionFailed(etag_header(current))

    def refuse(self, refusal: ApiError, now: datetime) -> Outcome:
        """Raise the refusal, kept first when it is a decision; a first answer replayed
        instead."""
        kept = self.keyed is not None and is_kept(refusal.status, refusal.code)
        self._refused_metric(refusal.code, kept=kept)
        return idempotency.refuse(self.keyed, refusal, now, self.partition.keep_answer)

    def unwritten(self, answer: Outcome, now: datetime) -> Outcome:
        """A real run with nothing to write (a change that changes nothing) still keeps its
        answer under its key, so a repeat gets it again even after the partition moved on;
        a live first answer of the key is replayed instead."""
        record = idempotency.answer_record(self.keyed, answer, now)
        if self.keyed is None or record is None:
            return answer
        stored = self.partition.keep_answer(record)
        return answer if stored is None else idempotency.replay(self.keyed, stored)

    def commit(self, snapshot: S, decided: W, answer: Outcome, now: datetime) -> Outcome | None:
        """The write made whole, committed with the key's record in one transaction, counted,
        and followed; on a lost race the key's first answer if its live record cancelled
        the write, else None (read and decide again)."""
        steps, ports = self.spec.commit, self.ports
        write = decided if steps.before is None else steps.before(decided, ports)
        if steps.finish is not None:
            write = steps.finish(snapshot, write)
        try:
            self.partition.commit(write, idempotency.answer_record(self.keyed, answer, now))
        except WriteConflict as conflict:
            return _lost_race(self.spec, self.keyed, conflict, now)
        _count(steps.committed(write), self.request.route, self.caller)
        if steps.after is not None:
            steps.after(snapshot, write, ports, now)
        return answer

    def first_answer_or(self, refusal: ApiError) -> Outcome:
        """The key's live first answer when there is one (a create whose term went stale
        since it committed, an end whose workload is gone because it did); else the
        refusal. Only then is the record read: one GetItem, on this path alone."""
        now = self.ports.clock()
        replayed = idempotency.first_answer(self.keyed, self.partition.stored_answer, now)
        if replayed is None:
            raise refusal
        return replayed

    def _refused_metric(self, code: str, *, kept: bool) -> None:
        logger.info(f"{self.spec.noun} refused", extra={"code": code, "kept": kept})
        metrics.add_metric(name=f"{self.spec.name}Refusals", unit=MetricUnit.Count, value=1)


def _lost_race(
    spec: WriteSpec[B, S, W, P],
    keyed: IdempotentRequest | None,
    conflict: WriteConflict,
    now: datetime,
) -> Outcome | None:
    """The key's first answer when its live record cancelled the write; else None: the
    attempt lost to a concurrent writer, and the retry reads again."""
    replayed = idempotency.answer_from_conflict(keyed, conflict, now)
    if replayed is None:
        logger.info(f"{spec.noun} lost a race; retrying", extra={"reasons": str(conflict)})
    return replayed


def _count(committed: Committed, route: Route, caller: Caller) -> None:
    who = {"callerOrgId": caller.org_id, "callerKeyId": caller.key_id}
    logger.info(committed.message, extra={**route.params, **committed.context, **who})
    for name, value in committed.counts.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)

"""The invariants judged over a whole replayed record (the claims and the lending are judged
during the replay itself, ``replay.py``).

- **terminations**: every ``workload.termination_requested`` (by its ``terminationId``; a
  deadline moved earlier is the same termination) is closed exactly once: one
  ``workload.terminated`` or one ``workload.ended`` naming it. None lost (a termination due
  within a grace of the record's end may still be in flight: counted, not judged), none
  doubled, and none closed that was never requested.
- **notices**: each request's ``terminateAt`` keeps the workload's promises as its
  ``workload.placed`` stated them: no earlier than ``requestedAt`` (the first request's, for
  a moved deadline) plus ``promisedNoticeSeconds``, nor than its placement (``createdAt``:
  the placement's time, to the second) plus ``promisedMinRunSeconds``. And a workload its
  node reported ``terminated`` was stopped (the report's ``time``) no earlier than the
  deadline it had then: the node's agent stops it at ``terminateAt``, "not before unless it
  stops by itself". A ``gone`` report (it had stopped by itself) and an end by the scheduler
  are counted, not judged.
- **followers**: each follower received exactly the feeds' set of event ids (duplicates
  aside): none missing, none that no feed holds (with a window, ``followedUntil``: the
  feeds' events up to it; a later one of the feeds is neither missing nor extra). An event
  a follower with a sender's schedule (the webhook receiver) has not received is owed, not
  missed, when its delivery (the record's ``owed``) is ``pending`` with its next attempt
  still to come (within a grace of the record's end), or ``failed``: the service keeps it
  and says so (retried by hand). Overdue, delivered, or unknown to the service: missed.
- **usage**: each node row of ``GET /v1/usage`` sums, over its states, to the node's units
  (and their GPUs) times the time it counts: from the later of its start and the node's
  registration to the earlier of its end and ``asOf``; where rows by reservation are given
  and count to the same moment (final, or read with the same ``asOf``), each governed state
  of the node's row is theirs (``reclaiming`` at least theirs: a unit nothing governs may
  be reclaiming too).
- **calls**: no 5xx but a 503 with ``Retry-After``, and every call that got one was tried
  again until it had an answer that is not a 5xx.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reservations_tools.soak.outcomes import Outcome
from reservations_tools.soak.record import Call, Event, Record, from_ms, to_ms
from reservations_tools.soak.replay import NodeReplay

REQUESTED = "workload.termination_requested"
CLOSING = ("workload.terminated", "workload.ended")
GOVERNED = ("review", "lent_used", "lent_idle", "reserved_used", "reserved_idle")
# How many missing or extra ids a follower's violation names.
NAMED_IDS = 5


def _terminations(replay: NodeReplay) -> tuple[dict[str, list[Event]], dict[str, list[Event]]]:
    """Each termination's requests and the events that closed it, in order."""
    asked: dict[str, list[Event]] = defaultdict(list)
    closed: dict[str, list[Event]] = defaultdict(list)
    for event in replay.events:
        termination = event.data.get("terminationId")
        if termination and event.type == REQUESTED:
            asked[str(termination)].append(event)
        elif termination and event.type in CLOSING:
            closed[str(termination)].append(event)
    return asked, closed


def _deadline(asks: Sequence[Event], at: int | None = None) -> int:
    """The earliest ``terminateAt`` requested (at or before ``at``): moves only go earlier."""
    return min(
        to_ms(str(e.data.get("terminateAt") or e.data.get("requestedAt") or from_ms(e.at)))
        for e in asks
        if at is None or e.at <= at
    )


def terminations(replays: Iterable[NodeReplay], recorded_at: int | None, grace: int) -> Outcome:
    out = Outcome("terminations", "every termination requested is closed exactly once")
    for replay in replays:
        asked, closed = _terminations(replay)
        for termination, asks in asked.items():
            out.judged()
            closing = closed.get(termination, [])
            if len(closing) > 1:
                out.broken(f"{termination} closed {len(closing)} times", [*asks, *closing])
            elif closing:
                out.notes[closing[0].data.get("outcome") or "ended"] += 1
            elif recorded_at is not None and _deadline(asks) > recorded_at - grace:
                out.notes["in flight at the record's end"] += 1
            else:
                out.broken(f"{termination} of {asks[0].about} never closed (lost)", asks)
        for termination, closing in closed.items():
            if termination not in asked:
                known = replay.placement_of(closing[0].about, closing[0].at) is not None
                if known:
                    out.broken(f"{termination} closed but never requested", closing)
                else:
                    out.notes["closed, requested before the record"] += 1
    return out


def notices(replays: Iterable[NodeReplay]) -> Outcome:
    out = Outcome("notices", "every promised notice and minimum run kept, and every deadline")
    for replay in replays:
        asked, _ = _terminations(replay)
        for event in replay.events:
            termination = str(event.data.get("terminationId"))
            if event.type == REQUESTED:
                _promised(out, replay, event, asked[termination][0])
            elif event.type == "workload.terminated" and termination in asked:
                _stopped(out, event, asked[termination])
            elif event.type == "workload.ended" and termination in asked:
                out.notes["ended by the scheduler (not judged)"] += 1
    return out


def _promised(out: Outcome, replay: NodeReplay, event: Event, first: Event) -> None:
    placed = replay.placement_of(event.about, event.at)
    if placed is None:
        out.notes["placed before the record (not judged)"] += 1
        return
    out.judged()
    notice = int(placed.data.get("promisedNoticeSeconds") or 0) * 1000
    min_run = int(placed.data.get("promisedMinRunSeconds") or 0) * 1000
    requested = to_ms(str(event.data.get("requestedAt") or from_ms(event.at)))
    first_requested = to_ms(str(first.data.get("requestedAt") or from_ms(first.at)))
    created = placed.at - placed.at % 1000
    floor = max(requested + notice, first_requested + notice, created + min_run)
    due = _deadline([event])
    if due < floor:
        out.broken(
            f"{event.about}'s terminateAt {from_ms(due)} before its promises allow "
            f"({from_ms(floor)}: notice {notice // 1000} s, minimum run {min_run // 1000} s)",
            [placed, event],
        )


def _stopped(out: Outcome, event: Event, asks: Sequence[Event]) -> None:
    if event.data.get("outcome") != "terminated":
        out.notes[f"{event.data.get('outcome')} (stopped by itself, not judged)"] += 1
        return
    out.judged()
    due = _deadline(asks, event.at)
    stopped = to_ms(str(event.data.get("time") or from_ms(event.at)))
    if stopped < due:
        out.broken(
            f"{event.about} stopped at {from_ms(stopped)}, before its deadline {from_ms(due)}",
            [*asks, event],
        )


def followers(record: Record, replays: Sequence[NodeReplay], grace: int) -> Outcome:
    out = Outcome("followers", "each follower saw exactly the feeds' events (by id)")
    every = {e.id: e for replay in replays for e in replay.events}
    until = record.followed_until
    events = {i: e for i, e in every.items() if until is None or e.at <= until}
    if len(events) < len(every):
        out.notes["events after the followers' window"] += len(every) - len(events)
    for name, received in sorted(record.followers.items()):
        seen = set(received)
        out.judged(len(events))
        out.notes[f"{name}: duplicates received"] += len(received) - len(seen)
        missing = sorted(set(events) - seen, key=lambda i: (events[i].at, i))
        deliveries = record.owed.get(name, {})
        owed = {i: why for i in missing
                if (why := _owed(deliveries.get(i), record.recorded_at, grace))}  # fmt: skip
        for why in owed.values():
            out.notes[f"{name}: owed, {why}"] += 1
        missing = [i for i in missing if i not in owed]
        extra = sorted(seen - set(every))
        if missing:
            shown = [events[i] for i in missing[:NAMED_IDS]]
            out.broken(f"{name} missed {len(missing)} event(s): {missing[:NAMED_IDS]}", shown)
        if extra:
            out.broken(f"{name} received {len(extra)} event(s) no feed holds: {extra[:NAMED_IDS]}")
    return out


def _owed(delivery: Mapping[str, Any] | None, recorded_at: int | None, grace: int) -> str | None:
    """Why an event not received is owed by its sender (None: it is not)."""
    state = (delivery or {}).get("state")
    if state == "failed":
        return "failed after its attempts (kept, retried by hand)"
    due = (delivery or {}).get("nextAttemptAt")
    if state != "pending" or not due:
        return None
    if recorded_at is None or to_ms(str(due)) > recorded_at - grace:
        return "pending, its next attempt not overdue"
    return None


def calls(attempts: Sequence[Call]) -> Outcome:
    out = Outcome("calls", "no 5xx but a 503 with Retry-After, each retried to an answer")
    by_call: dict[str, list[Call]] = defaultdict(list)
    for attempt in attempts:
        by_call[attempt.call].append(attempt)
    for call, tries in by_call.items():
        out.judged()
        for attempt in tries:
            if attempt.status >= 500 and (attempt.status != 503 or not attempt.retry_after):
                after = "with" if attempt.retry_after else "without"
                out.broken(f"{call} ({attempt.op}): {attempt.status} {after} Retry-After")
        if tries[-1].status >= 500:
            out.broken(f"{call} ({tries[-1].op}): its last answer was {tries[-1].status}")
        elif len(tries) > 1 and any(t.status >= 500 for t in tries):
            out.notes["503 retried to an answer"] += 1
    return out


Units = dict[str, int]  # unit -> its GPUs


def unit_spans(replay: NodeReplay) -> list[tuple[int, Units]]:
    """The node's units (with their GPUs) from each moment they changed, from its
    registration on (empty: the node was not registered in the record)."""
    spans: list[tuple[int, Units]] = []
    units: Units = {}
    for event in replay.events:
        if event.type not in ("node.registered", "node.updated"):
            continue
        units = dict(units)
        for unit in event.data.get("removedUnitIds") or ():
            units.pop(str(unit), None)
        for unit in event.data.get("addedUnitIds") or ():
            units.setdefault(str(unit), 0)
        for described in event.data.get("units") or ():
            units[str(described["id"])] = int(described.get("sellableGpus") or 0)
        spans.append((event.at, units))
    return spans


def counted(spans: Sequence[tuple[int, Units]], start: int, end: int) -> tuple[int, int]:
    """Unit-ms and GPU-ms of the node's units over ``[start, end)``."""
    unit_ms = gpu_ms = 0
    bounds = [at for at, _ in spans[1:]] + [end]
    for (at, units), until in zip(spans, bounds, strict=True):
        width = max(0, min(until, end) - max(at, start))
        unit_ms += width * len(units)
        gpu_ms += width * sum(units.values())
    return unit_ms, gpu_ms


def usage(rows: Sequence[Mapping[str, Any]], replays: Mapping[str, NodeReplay]) -> Outcome:
    out = Outcome("usage", "each node-period's usage sums to its units times the time counted")
    by_reservation: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        if row.get("reservationId"):
            by_reservation[(str(row["nodeId"]), str(row["start"]))].append(row)
    for row in rows:
        replay = replays.get(str(row.get("nodeId")))
        if row.get("reservationId"):
            continue
        if replay is None or not unit_spans(replay):
            out.notes["rows of nodes not registered in the record"] += 1
            continue
        out.judged()
        _balanced(out, row, unit_spans(replay))
        parts = by_reservation.get((str(row["nodeId"]), str(row["start"])))
        if parts and all(_counted_to(p) == _counted_to(row) for p in parts):
            _partitioned(out, row, parts)
            out.notes["node rows compared with their reservations' rows"] += 1
        elif parts:
            out.notes["node rows read at another moment than their reservations'"] += 1
    return out


def _counted_to(row: Mapping[str, Any]) -> int:
    """Until when a row counts: its end once final, else its ``asOf`` (two reads of the
    same period a moment apart count to different moments)."""
    return min(to_ms(str(row["end"])), to_ms(str(row["asOf"])))


def _balanced(out: Outcome, row: Mapping[str, Any], spans: Sequence[tuple[int, Units]]) -> None:
    start = max(to_ms(str(row["start"])), spans[0][0])
    end = min(to_ms(str(row["end"])), to_ms(str(row["asOf"])))
    unit_ms, gpu_ms = counted(spans, start, end)
    got_units, got_gpus = sum(row["unitMs"].values()), sum(row["gpuMs"].values())
    if (got_units, got_gpus) != (unit_ms, gpu_ms):
        out.broken(
            f"{row.get('id')}: unitMs sum {got_units} (units x time: {unit_ms}), "
            f"gpuMs sum {got_gpus} (GPUs x time: {gpu_ms})"
        )


def _partitioned(out: Outcome, row: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> None:
    for measure in ("unitMs", "gpuMs"):
        for state in (*GOVERNED, "reclaiming"):
            theirs = sum(int(p[measure].get(state, 0)) for p in parts)
            node = int(row[measure].get(state, 0))
            if node != theirs and not (state == "reclaiming" and node > theirs):
                out.broken(
                    f"{row.get('id')}: {measure}.{state} {node}, its reservations' rows {theirs}"
                )

"""A fold carried to an instant (``ledger.Carried``) as the text a checkpoint item keeps, and
back (pure). Only what the fold reads is kept: of a reservation, the fields its events set
(``ledger._reservation`` and the changes after it), each time whole (ISO 8601, UTC)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from reservations.kernel.times import parse_time
from reservations.nodes import Reservation, ReservationStatus
from reservations.usage.rules.ledger import Carried, Gap, Workload
from reservations.usage.rules.states import UsageState

# The version of the text's shape: a checkpoint of another shape is not read (the read
# folds from an earlier one, or from the node's first event).
SHAPE = 1


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _reservation(r: Reservation) -> dict[str, Any]:
    return {
        "id": r.id,
        "status": r.status.value,
        "startsAt": _time(r.starts_at),
        "endsAt": _time(r.ends_at),
        "createdAt": _time(r.created_at),
        "updatedAt": _time(r.updated_at),
        "reservedUnitIds": list(r.reserved_unit_ids),
        "releasedUnitIds": list(r.released_unit_ids),
        "topologyGen": r.topology_gen,
    }


def to_text(carried: Carried) -> str:
    """The checkpoint's text: keys sorted, so the same fold always gives the same text."""
    return json.dumps(
        {
            "shape": SHAPE,
            "nodeId": carried.node_id,
            "at": carried.at,
            "first": carried.first,
            "topologyGen": carried.topology_gen,
            "gpus": dict(carried.gpus),
            "generations": dict(carried.generations),
            "reservations": [_reservation(r) for r in carried.reservations],
            "workloads": {
                workload_id: {
                    "tier": w.tier,
                    "unitIds": sorted(w.unit_ids),
                    "terminating": w.terminating,
                    "waitingFor": sorted(w.waiting_for),
                }
                for workload_id, w in carried.workloads.items()
            },
            "opened": {
                unit_id: [start, state.value, reservation_id, gpus]
                for unit_id, (start, (state, reservation_id, gpus)) in carried.opened.items()
            },
            "gaps": [[gap.event_id, gap.what] for gap in carried.gaps],
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def _parsed(text: str | None) -> datetime | None:
    return None if text is None else parse_time(text)


def _read_reservation(node_id: str, r: dict[str, Any]) -> Reservation:
    return Reservation(
        id=r["id"],
        node_id=node_id,
        status=ReservationStatus(r["status"]),
        starts_at=parse_time(r["startsAt"]),
        ends_at=_parsed(r["endsAt"]),
        created_at=parse_time(r["createdAt"]),
        updated_at=parse_time(r["updatedAt"]),
        reserved_unit_ids=tuple(r["reservedUnitIds"]),
        released_unit_ids=tuple(r["releasedUnitIds"]),
        topology_gen=r["topologyGen"],
    )


def _read_workload(w: dict[str, Any]) -> Workload:
    return Workload(
        tier=w["tier"],
        unit_ids=frozenset(w["unitIds"]),
        terminating=bool(w["terminating"]),
        waiting_for=frozenset(w["waitingFor"]),
    )


def from_text(text: str) -> Carried | None:
    """The fold a checkpoint's text keeps; None for a text of another shape."""
    data = json.loads(text)
    if data.get("shape") != SHAPE:
        return None
    node_id = str(data["nodeId"])
    return Carried(
        node_id=node_id,
        at=int(data["at"]),
        first=data["first"],
        topology_gen=data["topologyGen"],
        gpus={unit_id: int(gpus) for unit_id, gpus in data["gpus"].items()},
        generations={unit_id: int(gen) for unit_id, gen in data["generations"].items()},
        reservations=tuple(_read_reservation(node_id, r) for r in data["reservations"]),
        workloads={w_id: _read_workload(w) for w_id, w in data["workloads"].items()},
        opened={
            unit_id: (int(start), (UsageState(state), reservation_id, int(gpus)))
            for unit_id, (start, state, reservation_id, gpus) in data["opened"].items()
        },
        gaps=tuple(Gap(event_id, what) for event_id, what in data["gaps"]),
    )

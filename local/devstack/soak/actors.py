"""The soak's actors, each a thread with its own seeded choices, over the HTTP API: the
node's owner, two brokers, two schedulers. What they decide from they read through the API
(list units, the reservations, the workloads), as their real counterparts would."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from devstack.soak.calls import Calls

Actor = Callable[[Calls, random.Random, str], None]


def now() -> datetime:
    return datetime.now(UTC)


def at_second(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_path(node: str) -> str:
    return f"/v1/nodes/{node}"


def active(calls: Calls, actor: str, role: str, node: str) -> list[dict[str, Any]]:
    answer = calls.call(
        actor,
        role,
        "GET",
        f"{node_path(node)}/reservations",
        params={"status": "active"},
        op="list reservations",
    )
    return [r for r in answer.items if r.get("status") == "active"]


def units(calls: Calls, actor: str, role: str, node: str) -> list[dict[str, Any]]:
    answer = calls.call(
        actor, role, "GET", f"{node_path(node)}/reservations/units", op="list units"
    )
    return list(answer.body) if answer.status == 200 and isinstance(answer.body, list) else []


def create(calls: Calls, rng: random.Random, actor: str, node: str) -> None:
    """Ungoverned free units, for 2 to 8 minutes (a fifth starting in a minute or so)."""
    free = [
        u["id"]
        for u in units(calls, actor, "owner", node)
        if u["state"] == "free" and not u.get("reservationId")
    ]
    if not free:
        return
    starts = now() + (
        timedelta(seconds=rng.randint(30, 90)) if rng.random() < 0.2 else timedelta(0)
    )
    body: dict[str, Any] = {
        "unitIds": sorted(rng.sample(free, min(len(free), rng.randint(1, 3)))),
        "allowedOrgIds": ["org-lab"],
        "managingOrgIds": ["org-broker"],
        "endsAt": at_second(starts + timedelta(minutes=rng.randint(2, 8))),
    }
    if starts > now() + timedelta(seconds=5):
        body["startsAt"] = at_second(starts)
    calls.call(actor, "owner", "POST", f"{node_path(node)}/reservations", body=body, op="create")


def owner(calls: Calls, rng: random.Random, actor: str, nodes: list[str]) -> None:
    node = rng.choice(nodes)
    roll = rng.random()
    if roll < 0.7:
        create(calls, rng, actor, node)
        return
    live = active(calls, actor, "owner", node)
    if not live:
        return
    path = f"{node_path(node)}/reservations/{rng.choice(live)['id']}"
    if roll < 0.9:
        ends = at_second(now() + timedelta(minutes=rng.randint(1, 6)))
        calls.call(actor, "owner", "PATCH", path, body={"endsAt": ends}, op="change end")
    elif len(live) > 1:
        calls.call(actor, "owner", "POST", f"{path}/cancel", op="cancel")


def notice(rng: random.Random) -> dict[str, int]:
    return {"noticeSeconds": rng.choice([0, 0, 10, 30, 60])}


def broker(calls: Calls, rng: random.Random, actor: str, nodes: list[str]) -> None:
    """Release, reclaim (by units, by count, with notice), or a lending policy."""
    node = rng.choice(nodes)
    live = active(calls, actor, "broker", node)
    if not live:
        return
    res = rng.choice(live)
    path = f"{node_path(node)}/reservations/{res['id']}"
    lent, held = sorted(res["releasedUnitIds"]), sorted(res["reservedUnitIds"])
    roll = rng.random()
    if roll < 0.4 or (not lent and roll < 0.8):
        chosen = sorted(rng.sample(held, rng.randint(1, len(held))))
        calls.call(
            actor, "broker", "POST", f"{path}/release", body={"unitIds": chosen}, op="release"
        )
    elif roll < 0.65 and lent:
        chosen = sorted(rng.sample(lent, rng.randint(1, len(lent))))
        calls.call(
            actor,
            "broker",
            "POST",
            f"{path}/reclaim",
            body={"unitIds": chosen, **notice(rng)},
            op="reclaim",
        )
    elif roll < 0.8 and lent:
        calls.call(
            actor,
            "broker",
            "POST",
            f"{path}/reclaim",
            body={"count": rng.randint(1, len(lent)), **notice(rng)},
            op="reclaim by count",
        )
    else:
        lending(calls, rng, actor, path)


def lending(calls: Calls, rng: random.Random, actor: str, path: str) -> None:
    if rng.random() < 0.2:
        calls.call(actor, "broker", "DELETE", f"{path}/lending", op="clear lending")
        return
    body = {
        "auto": rng.random() < 0.5,
        "idleSeconds": 60,
        "relendAfterSeconds": 0,
        "noticeSeconds": rng.choice([0, 15, 45]),
        "minRunSeconds": rng.choice([0, 0, 30]),
    }
    calls.call(actor, "broker", "PUT", f"{path}/lending", body=body, op="set lending")


def scheduler(calls: Calls, rng: random.Random, actor: str, nodes: list[str]) -> None:
    """Spot work on lent free units; the audience's work taking units back; ends."""
    node = rng.choice(nodes)
    roll = rng.random()
    if roll < 0.65:
        place_spot(calls, rng, actor, node)
    elif roll < 0.75:
        take_back(calls, rng, actor, node)
    else:
        end(calls, rng, actor, node)


def place(calls: Calls, actor: str, node: str, body: dict[str, Any], op: str) -> None:
    calls.call(actor, "operator", "POST", f"{node_path(node)}/workloads", body=body, op=op)


def place_spot(calls: Calls, rng: random.Random, actor: str, node: str) -> None:
    """On units list units shows lent and free (not held for a waiting workload)."""
    lent = [
        u["id"]
        for u in units(calls, actor, "operator", node)
        if u.get("released") and u["state"] == "free" and not u.get("heldFor")
    ]
    if lent:
        chosen = sorted(rng.sample(lent, min(len(lent), rng.choice([1, 1, 2]))))
        body = {
            "id": f"{actor}-{rng.randrange(10**9)}",
            "kind": "vm",
            "tier": "spot",
            "orgId": "org-spotbuyer",
            "unitIds": chosen,
        }
        place(calls, actor, node, body, "place spot")


def take_back(calls: Calls, rng: random.Random, actor: str, node: str) -> None:
    """The audience's work on one unit of an active reservation, the service choosing."""
    live = active(calls, actor, "operator", node)
    if live:
        body = {
            "id": f"{actor}-{rng.randrange(10**9)}",
            "kind": "vm",
            "tier": "reserved",
            "orgId": "org-lab",
            "reservationId": rng.choice(live)["id"],
            "count": 1,
        }
        place(calls, actor, node, body, "take back")


def end(calls: Calls, rng: random.Random, actor: str, node: str) -> None:
    answer = calls.call(
        actor, "operator", "GET", f"{node_path(node)}/workloads", op="list workloads"
    )
    if answer.items:
        workload = rng.choice(answer.items)["id"]
        calls.call(actor, "operator", "DELETE", f"{node_path(node)}/workloads/{workload}", op="end")


# actor name -> (what it does once, its pause between two: seconds from, to)
ACTORS: dict[str, tuple[Callable[..., None], float, float]] = {
    "owner": (owner, 2.0, 6.0),
    "broker-1": (broker, 0.5, 2.0),
    "broker-2": (broker, 0.5, 2.0),
    "scheduler-1": (scheduler, 0.3, 1.5),
    "scheduler-2": (scheduler, 0.3, 1.5),
}


def run_actor(
    calls: Calls, seed: int, name: str, nodes: list[str], stop: threading.Event
) -> threading.Thread:
    """The actor on a thread of its own until ``stop``, its choices seeded by ``seed``."""
    step, shortest, longest = ACTORS[name]
    rng = random.Random(f"{seed}-{name}")  # noqa: S311 - a seeded run, not a secret

    def loop() -> None:
        while not stop.wait(rng.uniform(shortest, longest)):
            try:
                step(calls, rng, name, nodes)
            except Exception as error:  # an answer it did not expect: counted, and on
                calls.count_error(f"{name}: {type(error).__name__}: {error}"[:200])

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread

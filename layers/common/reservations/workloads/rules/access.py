"""Who may place and end workloads: the platform's scheduler."""

from __future__ import annotations

from reservations.kernel.caller import Caller

PLACE = "workload.place"


def may_place_workloads(caller: Caller) -> bool:
    """Place and end workloads (the platform scheduler's calls): ``workload.place``, operator
    keys only; decided before any read, as no node's data can change it."""
    return caller.has(PLACE) and caller.platform_operator

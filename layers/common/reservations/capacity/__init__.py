"""The capacity slice: release, reclaim, the reclaim's plan, the lending policy and the
lending pass. The clock's entry point runs the pass; the workloads slice's placement takes
lent units back with the reclaim's rules and actions (its count rule, its plan and write,
its deadlines, its events and sends), which it uses from here."""

from reservations.capacity.lending import run_lending
from reservations.capacity.reclaim import reclaim_write, send_opened, take_back_events
from reservations.capacity.rules.plan import plan_reclaim, units_by_count
from reservations.capacity.table import take_back_actions
from reservations.capacity.wiring import capacity_ports
from reservations.capacity.writes import ReclaimWrite

__all__ = [
    "ReclaimWrite",
    "capacity_ports",
    "plan_reclaim",
    "reclaim_write",
    "run_lending",
    "send_opened",
    "take_back_actions",
    "take_back_events",
    "units_by_count",
]

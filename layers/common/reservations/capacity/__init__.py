"""The capacity slice: release, reclaim, the reclaim's plan, the lending policy and the
lending pass. Other slices use none of it; the clock's entry point runs the pass."""

from reservations.capacity.lending import run_lending
from reservations.capacity.wiring import capacity_ports

__all__ = ["capacity_ports", "run_lending"]

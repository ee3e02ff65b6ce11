"""Stacked horizontal bars in the terminal, drawn with Rich: one bar a line, each part of it
one state's share in that state's colour (and mark, for a terminal without colour), every
bar on the scale of the longest, and a legend; every line within the width given.

What the amounts are, and how they read, is the caller's: it hands over each bar's label and
its amount per state, the states' order and how an amount is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

GAP = "  "  # between the legend's entries
SHORTEST_BAR = 10  # cells: narrower than that, a line may run past the width


@dataclass(frozen=True)
class Look:
    """How a state is drawn: its colour, and the mark its cells are drawn with."""

    colour: str
    mark: str = "█"


# Used states in full blocks, idle ones shaded: the pairs read apart without colour too.
LOOKS: Mapping[str, Look] = {
    "review": Look("magenta", "░"),
    "reclaiming": Look("red"),
    "lent_used": Look("blue"),
    "lent_idle": Look("bright_blue", "▒"),
    "reserved_used": Look("green"),
    "reserved_idle": Look("bright_green", "▒"),
    "open_used": Look("yellow"),
    "open_idle": Look("bright_black", "▒"),
}
# States a newer API adds: these colours in turn, in the states' order.
SPARE_COLOURS = ("cyan", "bright_magenta", "bright_cyan", "bright_red", "bright_yellow", "white")


def looks(states: Sequence[str]) -> dict[str, Look]:
    """Each state's look: its own, or the next spare colour (``▓``) for one not known."""
    unknown = [state for state in states if state not in LOOKS]
    spare = {
        state: Look(SPARE_COLOURS[i % len(SPARE_COLOURS)], "▓") for i, state in enumerate(unknown)
    }
    return {state: LOOKS.get(state) or spare[state] for state in states}


@dataclass(frozen=True)
class Bar:
    """One line of the chart: its label, its amount per state, and a one-cell note after
    the label (``*``: not final)."""

    label: str
    parts: Mapping[str, int]
    note: str = ""
    tail: str = ""  # after the total (the caller's: a share, say)


def cells(parts: Mapping[str, int], order: Sequence[str], longest: int, width: int) -> list[int]:
    """How many cells each state of ``order`` takes of a bar whose amounts are ``parts``, on
    the scale where ``longest`` fills ``width``: the parts' running sums rounded (half up), so
    the cells add up to the whole bar's length rounded, and no rounding is counted twice."""
    if longest <= 0:
        return [0 for _ in order]
    running, edges = 0, [0]
    for state in order:
        running += max(parts.get(state, 0), 0)
        edges.append((2 * running * width + longest) // (2 * longest))
    return [edges[i + 1] - edges[i] for i in range(len(order))]


def legend(order: Sequence[str], totals: Mapping[str, int], show: Callable[[int], str],
           width: int) -> list[Text]:  # fmt: skip
    """One entry per state (its mark in its colour, its name, its total), as many on a line
    as fit ``width``."""
    drawn = looks(order)
    lines: list[Text] = []
    line = Text()
    for state in order:
        entry = Text()
        entry.append(drawn[state].mark, Style(color=drawn[state].colour))
        entry.append(f" {state} {show(totals.get(state, 0))}")
        if line.cell_len and line.cell_len + len(GAP) + entry.cell_len > width:
            lines.append(line)
            line = Text()
        if line.cell_len:
            line.append(GAP)
        line.append_text(entry)
    if line.cell_len:
        lines.append(line)
    return lines


def stacked_bars(
    bars: Sequence[Bar], order: Sequence[str], show: Callable[[int], str], width: int
) -> list[Text]:
    """The bars, one line each: the label (and its note), the bar, its total (and tail)
    right-aligned; every bar on the scale of the longest one, which fills what the labels
    and totals leave of ``width``. Then a blank line and the legend."""
    drawn = looks(order)
    labels = max((cell_len(bar.label) for bar in bars), default=0)
    notes = max((cell_len(bar.note) for bar in bars), default=0)
    ends = [f"{show(sum(bar.parts.values()))}{bar.tail}" for bar in bars]
    end_width = max((cell_len(end) for end in ends), default=0)
    room = max(width - labels - notes - 1 - 1 - end_width, SHORTEST_BAR)
    longest = max((sum(max(v, 0) for v in bar.parts.values()) for bar in bars), default=0)
    lines: list[Text] = []
    for bar, end in zip(bars, ends, strict=True):
        line = Text(bar.label.ljust(labels) + bar.note.ljust(notes) + " ")
        used = 0
        for state, size in zip(order, cells(bar.parts, order, longest, room), strict=True):
            line.append(drawn[state].mark * size, Style(color=drawn[state].colour))
            used += size
        line.append(" " * (room - used) + " " + end.rjust(end_width))
        lines.append(line)
    totals = {state: sum(bar.parts.get(state, 0) for bar in bars) for state in order}
    return [*lines, Text(), *legend(order, totals, show, width)]

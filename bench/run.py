"""`make bench`: what only a benchmark can show, as tables; the figures also go to
.local/bench/results.json (not kept in git).

1. handler overhead: the handler's wall time over the same requests sent with boto3;
2. cost per million calls, from the requests a real run sent and the items it touched;
3. cold init of each function in the Lambda image, against a bare Powertools handler;
4. commit to org feed and to the event bus in the local stack (``make run``), over a batch;
5. the node's past: bytes read and time of list units and a reclaim at 0, 1,000 and 10,000
   ended reservations;
6. what one page of GET /v1/usage reads, by the node's past and by the org's fleet, and
   what it reads more for each 1,000 more events in the node's past.

How many requests a call makes, and that it does not grow with the fleet, are pinned by tests.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from typing import Any

from bench import coldstart, costs, events, history, prices, usage
from devstack import template

RESULTS = coldstart.WORK / "results.json"
INIT_GOAL = 1.2
EVENTS_GOAL_S = 2.0
COST_COLUMNS = ["DynamoDB", "SQS", "Lambda", "HTTP API"]


def table(title: str, headers: list[str], rows: list[list[Any]]) -> str:
    """Left-aligned first column, the others right-aligned."""
    cells = [headers, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        first, *rest = zip(row, widths, strict=True)
        return "  ".join([first[0].ljust(first[1]), *(c.rjust(w) for c, w in rest)]).rstrip()

    return "\n".join([title, line(headers), line(["-" * w for w in widths]), *map(line, cells[1:])])


def dollars_per_million(row: dict[str, Any], memory_mb: int) -> dict[str, float]:
    """What a million such calls cost, by service (Lambda billed per started millisecond)."""
    gb_seconds = memory_mb / 1024 * math.ceil(row["handler_ms"]) / 1000
    return {
        "DynamoDB": row["read_units"] * prices.DYNAMODB_READ_REQUEST_UNIT * 1e6
        + row["write_units"] * prices.DYNAMODB_WRITE_REQUEST_UNIT * 1e6,
        "SQS": row["sqs_requests"] * prices.SQS_FIFO_REQUEST * 1e6,
        "Lambda": (prices.LAMBDA_REQUEST + gb_seconds * prices.LAMBDA_GB_SECOND) * 1e6,
        "HTTP API": prices.HTTP_API_REQUEST * 1e6,
    }


def overhead_table(rows: list[dict[str, Any]]) -> str:
    return table(
        f"1. Handler overhead: handler wall time / the same requests sent with boto3 (moto "
        f"in-process, median of {rows[0]['runs']} paired runs; goal <= {costs.OVERHEAD_GOAL})",
        ["call", "requests", "handler ms", "boto3 ms", "ratio", "verdict"],
        [
            [
                r["call"],
                ", ".join(f"{op.split('.')[1]} {n}" for op, n in r["requests"].items()),
                *(f"{r['handler_ms']:.1f}", f"{r['raw_ms']:.1f}", f"{r['ratio']:.2f}"),
                "ok" if r["ratio"] <= costs.OVERHEAD_GOAL else "MISSES",
            ]
            for r in rows
        ],
    )


def cost_table(rows: list[dict[str, Any]], memory_mb: int) -> str:
    body = []
    for r in rows:
        cost = dollars_per_million(r, memory_mb)
        units = f"{r['read_units']:g} R / {r['write_units']:g} W"
        body.append(
            [r["call"], units, r["sqs_requests"], math.ceil(r["handler_ms"])]
            + [f"{v:.2f}" for v in cost.values()]
            + [f"{sum(cost.values()):.2f}"]
        )
    text = table(
        f"2. Dollars per million calls ({prices.REGION}, prices of {prices.AS_OF}; Lambda at "
        f"{memory_mb} MB for the handler time measured above)",
        ["call", "DynamoDB units", "SQS req", "Lambda ms", *COST_COLUMNS, "total"],
        body,
    )
    listed = "; ".join(f"{what} ${price:g} {unit}" for what, price, unit in prices.ROWS)
    return f"{text}\nprices (bench/prices.py): {listed}"


def init_tables(variants: list[dict[str, Any]], layer_mb: float) -> str:
    """One row per function; per variant its median init and that over the bare handler's."""
    deployed, *others = variants
    headers = ["function", "init ms", "import ms", "vs bare", "verdict"]
    for index in range(len(others)):
        headers += [f"({'bc'[index]}) init ms", "vs bare"]
    rows = []
    for i, r in enumerate(deployed["rows"]):
        verdict = (
            "" if r["target"] == coldstart.BARE else "ok" if r["ratio"] <= INIT_GOAL else "MISSES"
        )
        row = [
            r["target"],
            f"{r['init_ms']:.0f}",
            f"{r['import_ms']:.0f}",
            f"{r['ratio']:.2f}",
            verdict,
        ]
        for variant in others:
            row += [f"{variant['rows'][i]['init_ms']:.0f}", f"{variant['rows'][i]['ratio']:.2f}"]
        rows.append(row)
    title = (
        f"3. Cold init in the Lambda image, process start to handler imported (median of "
        f"{deployed['runs']}): (a) {deployed['variant']}, goal <= {INIT_GOAL}x bare; "
        + "; ".join(f"({'bc'[i]}) {v['variant']}" for i, v in enumerate(others))
    )
    return table(title, headers, rows) + f"\nlayer as built: {layer_mb:.1f} MB unzipped"


def events_table(relay: dict[str, Any]) -> str:
    rows = [
        ["on the bus", f"{relay['bus_median_s']:.2f}", f"{relay['bus_max_s']:.2f}",
         "ok" if relay["bus_median_s"] <= EVENTS_GOAL_S else "MISSES"],
        ["in the org feed", f"{relay['feed_median_s']:.2f}", f"{relay['feed_max_s']:.2f}",
         "ok" if relay["feed_median_s"] <= EVENTS_GOAL_S else "MISSES"],
    ]  # fmt: skip
    return table(
        f"4. Reclaim's commit to its event delivered, local stack (make run), {relay['events']} "
        f"real reclaims one at a time (goal: median <= {EVENTS_GOAL_S:g} s)",
        ["event", "median s", "max s", "verdict"],
        rows,
    )


def history_table(rows: list[dict[str, Any]]) -> str:
    first = {row["call"]: row for row in rows if row["past"] == 0}
    return table(
        "5. The node's past: bytes DynamoDB sent back and handler time, by ended reservations "
        "in the node's history (moto in-process, median; goal: bytes as with none)",
        ["call", "ended", "bytes read", "vs none", "handler ms"],
        [
            [r["call"], f"{r['past']:,}", f"{r['bytes']:,.0f}",
             f"{r['bytes'] / first[r['call']]['bytes']:.2f}", f"{r['ms']:.1f}"]
            for r in rows
        ],
    )  # fmt: skip


def usage_table(rows: list[dict[str, Any]]) -> str:
    text = table(
        "6. One page of GET /v1/usage, a day's rows, asked by the node's owner (key cached): "
        "what it reads, by the node's past and by the org's fleet (moto in-process; items "
        "and KB as DynamoDB bills them, whole items, projected or not)",
        ["case", "requests", "items read", "KB read", "read units", "fold ms"],
        [
            [r["case"],
             ", ".join(f"{op.split('.')[1]} {n}" for op, n in r["requests"].items()),
             f"{r['items']:,}", f"{r['item_bytes'] / 1000:,.1f}", f"{r['read_units']:,g}",
             "" if r["fold_ms"] is None else f"{r['fold_ms']:,.0f}"]
            for r in rows
        ],
    )  # fmt: skip
    lines = [text, ""]
    for group_by in ("node", "reservation"):
        more = usage.growth(rows, group_by)
        lines.append(
            f"by {group_by}: from {more['from']:,} to {more['to']:,} past events, a page reads "
            f"{more['items']:+,.0f} items, {more['item_bytes'] / 1000:+,.1f} KB, "
            f"{more['read_units']:+,.1f} read units for each 1,000 more"
        )  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    warnings.simplefilter("ignore")  # Powertools: "No application metrics to publish"
    started = time.perf_counter()
    memory_mb = int(template.document()["Globals"]["Function"]["MemorySize"])
    print("bench: handlers in-process over moto...", file=sys.stderr, flush=True)
    calls = costs.run()
    print("bench: nodes with a long past, in-process over moto...", file=sys.stderr, flush=True)
    past = history.run()
    print("bench: pages of GET /v1/usage, in-process over moto...", file=sys.stderr, flush=True)
    usage_rows = usage.run()
    print("bench: sam build, then cold starts in the Lambda image...", file=sys.stderr, flush=True)
    init = coldstart.cold_start()
    print("bench: make run, then reclaims one at a time...", file=sys.stderr, flush=True)
    relay = events.run(coldstart.WORK / "make-run.log")
    print()
    print(overhead_table(calls), end="\n\n")
    print(cost_table(calls, memory_mb), end="\n\n")
    print(init_tables(init, coldstart.layer_megabytes()), end="\n\n")
    print(events_table(relay), end="\n\n")
    print(history_table(past), end="\n\n")
    print(usage_table(usage_rows), end="\n\n")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    results = {"calls": calls, "cold_init": init, "events": relay, "history": past,
               "usage": usage_rows}  # fmt: skip
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    where = RESULTS.relative_to(coldstart.ROOT)
    print(f"bench took {time.perf_counter() - started:.0f} s; figures in {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

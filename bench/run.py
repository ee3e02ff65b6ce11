"""Run the benchmark: print one table per budget of shared/design.md, write bench/results.json.

    .venv/bin/python -m bench.run        (make bench)

Figures are medians over the stated number of runs. Nothing is asserted: a figure that
misses its goal is printed as MISSES with one line on why, measured.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import warnings
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results.json"

# Read by the functions when their modules load, so set before anything imports them.
ENV = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "TABLE_NAME": "ReservationsTable",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "Bench",
    "POWERTOOLS_SERVICE_NAME": "reservations",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    # One warm container for the whole run: "key cached" must stay cached (the bench
    # clears the cache itself where it measures the uncached case).
    "KEY_CACHE_TTL_SECONDS": "3600",
}


_START = time.perf_counter()


def progress(message: str) -> None:
    print(f"bench [{time.perf_counter() - _START:5.0f} s]: {message}", file=sys.stderr, flush=True)


# --- tables --------------------------------------------------------------------------------


def table(title: str, headers: list[str], rows: list[list[Any]], align: str) -> str:
    cells = [headers, *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(
            (cell.rjust(w) if a == "r" else cell.ljust(w))
            for cell, w, a in zip(row, widths, align, strict=True)
        ).rstrip()

    out = [title, line(headers), line(["-" * w for w in widths])]
    out += [line(row) for row in cells[1:]]
    return "\n".join(out)


def ms(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def requests_text(requests: dict[str, float]) -> str:
    return ", ".join(f"{n.split('.', 1)[1]} {fmt(c)}" for n, c in requests.items())


def budget_text(budget: dict[str, int]) -> str:
    text = f"{budget['dynamodb']} DynamoDB"
    return text + (f" + {budget['sqs']} SQS" if budget["sqs"] else "")


def shares(share: dict[str, float], total_ms: float, top: int = 4) -> str:
    return ", ".join(f"{k} {v * total_ms:.2f} ms" for k, v in list(share.items())[:top])


def section_requests(rows: list[dict[str, Any]]) -> str:
    text = table(
        "1. AWS requests per call (functions' clients, counted by botocore hooks; key cached "
        "unless said)",
        ["call", "runs", "requests (median, by operation)", "DynamoDB", "SQS", "budget", "verdict"],
        [
            [
                r["call"],
                r["runs"],
                requests_text(r["requests"]),
                fmt(r["dynamodb"]),
                fmt(r["sqs"]),
                budget_text(r["budget"]),
                r["verdict"],
            ]
            for r in rows
        ],
        "lrlrrll",
    )
    if any("queued mark" in r["verdict"] for r in rows):
        text += (
            "\nwhy: after SendMessageBatch a reclaim sends a second TransactWriteItems that marks "
            "the sent terminations queuedAt, so the sweeper can tell never-sent from "
            "sent-not-confirmed (docs/decisions.md, 'Requests per reclaim'); without "
            "terminations it is 2."
        )
    return text


def section_fleet(result: dict[str, Any]) -> str:
    small, large = result["fleet_nodes"]["small"], result["fleet_nodes"]["large"]
    rows = []
    for call in result["calls"]:
        for size, figures in ((small, call["small"]), (large, call["large"])):
            last = figures is call["large"]
            rows.append(
                [
                    call["call"] if not last else "",
                    size,
                    figures["runs"],
                    requests_text(figures["requests"]),
                    f"{fmt(figures['items_count'])} / {fmt(figures['items_scanned'])}",
                    ms(figures["median_ms"]),
                    ("yes" if call["identical"] else "no") if last else "",
                    ("ok" if call["identical"] else "MISSES") if last else "",
                ]
            )
    text = table(
        f"2. Fleet-size invariance (same call, same node shape, fleet of {small} vs {large} nodes)",
        [
            "call",
            "fleet nodes",
            "runs",
            "requests (median)",
            "items read (Count / Scanned)",
            "ms (info)",
            "identical",
            "verdict",
        ],
        rows,
        "lrrlrrll",
    )
    text += (
        f"\nnote: the {large - small} added nodes ({result['items_per_node']} items each) were "
        f"bulk-loaded in {result['bulk_load_seconds']:.1f} s. ms is info only: moto's Query "
        "walks every item of the table and its transactions deep-copy the table, so emulator "
        "times grow with the table; DynamoDB's Query reads one partition."
    )
    return text


def section_overhead(rows: list[dict[str, Any]]) -> str:
    text = table(
        "3. Handler overhead (handler wall time vs the same requests sent directly with boto3, "
        "same emulator, alternating runs)",
        [
            "call",
            "runs",
            "requests",
            "handler ms",
            "raw boto3 ms",
            "overhead ms",
            "outside AWS ms*",
            "ratio",
            "goal",
            "verdict",
        ],
        [
            [
                r["call"],
                r["runs"],
                " + ".join(op.split(".", 1)[1] for op in r["requests"]),
                ms(r["handler_ms"]),
                ms(r["raw_boto3_ms"]),
                ms(r["overhead_ms"]),
                ms(r["outside_aws_stubbed_ms"]),
                f"{r['ratio']:.2f}",
                f"<= {r['goal']}",
                r["verdict"],
            ]
            for r in rows
        ],
        "lrlrrrrrll",
    )
    text += (
        "\nratio: median over runs of handler / raw, each handler run paired with the raw run "
        "right after it.\n* the handler with its AWS calls answered from recorded responses: "
        "its own time (Powertools, parsing, rules, responses), no request at all."
    )
    for r in rows:
        if "profile" in r:
            own = r["outside_aws_stubbed_ms"]
            by_package = shares(r["profile"]["share_by_package"], own, 4)
            if (r["raw_boto3_ms"] + own) / r["raw_boto3_ms"] > r["goal"]:
                text += (
                    f"\nwhy ({r['call']}): the handler's own work, {ms(own)} ms, is itself "
                    f"over {r['goal']}x the {ms(r['raw_boto3_ms'])} ms of requests; by package "
                    f"(cProfile): {by_package}"
                )
            else:
                text += (
                    f"\nwhy ({r['call']}): only {ms(own)} ms of the {ms(r['handler_ms'])} ms "
                    f"is the handler's own work (by package, cProfile: {by_package}); the rest "
                    f"of the {ms(r['overhead_ms'])} ms gap is the emulator's variance (raw "
                    f"runs' interquartile range {ms(r['raw_boto3_iqr_ms'])} ms)"
                )
    return text


def section_cold(settings: list[dict[str, Any]], built: dict[str, Any]) -> str:
    parts = []
    for index, setting in enumerate(settings):
        rows = setting["rows"]
        text = table(
            f"4{'ab'[index]}. Cold start, {setting['title']}: import of the handler module in a "
            f"fresh interpreter (PYTHONPATH={setting['pythonpath']}, as /opt/python)",
            [
                "module",
                "runs",
                "median ms",
                "min-max ms",
                "ratio vs bare",
                "goal",
                "verdict",
                "< 1 s (design.md)",
            ],
            [
                [
                    r["module"],
                    r["runs"],
                    ms(r["median_ms"]),
                    f"{ms(r['min_ms'])}-{ms(r['max_ms'])}",
                    f"{r['ratio']:.2f}",
                    "" if "verdict" not in r else "<= 1.5",
                    r.get("verdict", "baseline"),
                    "ok" if r["under_a_second"] else "MISSES",
                ]
                for r in rows
            ],
            "lrrrrlll",
        )
        for r in rows:
            if r.get("verdict") == "MISSES" and "extra_imports_ms" in r:
                extra = ", ".join(
                    f"{k} {v:.0f} ms" for k, v in list(r["extra_imports_ms"].items())[:4]
                )
                text += (
                    f"\nwhy ({r['module']}): imports beyond the bare one (-X importtime): {extra}"
                )
        packages = ", ".join(
            f"{k} {v:.0f} ms"
            for k, v in list(setting["baseline_imports_by_package_ms"].items())[:4]
        )
        if not setting["bytecode_written"]:
            botocore = built["largest_in_layer_bytes"].get("botocore")
            over = not all(r["under_a_second"] for r in rows)
            text += (
                f"\n{'why (over 1 s)' if over else 'note'}: the layer ships "
                f"{built['layer_pyc_files']} .pyc files, so in Lambda "
                "(read-only /opt) every cold start compiles each layer module it imports: the "
                f"bare handler takes {ms(rows[0]['median_ms'])} ms here against "
                f"{ms(settings[0]['rows'][0]['median_ms'])} ms with bytecode (4a)."
            )
            if botocore:
                text += (
                    f" The layer also carries its own botocore ({botocore / 1e6:.0f} MB, "
                    "pulled in by aws-xray-sdk), ahead of the runtime's on sys.path."
                )
            text += f" Bare handler's imports by package (-X importtime): {packages}."
        elif not all(r["under_a_second"] for r in rows):
            text += (
                f"\nwhy (over a second): the bare handler alone takes {ms(rows[0]['median_ms'])} "
                f"ms; by package (-X importtime): {packages}."
            )
        parts.append(text)
    limit_mb = built["limit_bytes"] / 2**20
    largest = ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in built["largest_in_layer_bytes"].items())
    text = table(
        f"4{'abc'[len(settings)]}. Built artifacts (.aws-sam/build after sam build --cached "
        "--parallel)",
        ["artifact", "bytes", "MB", "with layer MB", "goal", "verdict"],
        [
            [
                r["artifact"],
                r["bytes"],
                f"{r['mb']:.3f}",
                f"{r['with_layer_bytes'] / 1e6:.1f}",
                f"<= {limit_mb:.0f} MiB unzipped",
                r["verdict"],
            ]
            for r in built["rows"]
        ],
        "lrrrll",
    )
    text += f"\nlargest in the layer: {largest}"
    if not built["sam_build_ok"]:
        text += f"\nnote: sam build failed ({built['sam_build_note']}); sizes of the last build."
    parts.append(text)
    return "\n\n".join(parts)


# --- machine -------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for name in ("boto3", "botocore", "moto", "aws-lambda-powertools", "pydantic"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "nproc": len(os.sched_getaffinity(0)),
        "cpu": cpu,
        "versions": versions,
    }


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v) for v in value]
    return value


def main() -> int:
    started = time.perf_counter()
    warnings.simplefilter("ignore")  # Powertools: "No application metrics to publish"
    os.environ.update(ENV)
    from botocore.config import Config

    from bench import coldstart, emulated
    from reservations.dal import clients

    # moto needs seconds for a transaction on the 10,000-node table (see fleet_size); the
    # functions' 5 s read timeout would turn that into retries. Only the timeout changes.
    clients._CONFIG = clients._CONFIG.merge(Config(read_timeout=120))

    progress("starting the emulator")
    emu = emulated.Emulator()
    os.environ["LOCAL_AWS_ENDPOINT"] = emu.endpoint
    clients.reset()
    fns = emulated.Functions()
    recorder = emulated.Recorder()
    try:
        progress("3. handler overhead")
        overhead = emulated.handler_overhead(emu, fns, recorder)
        recorder.attach(clients.dynamodb(), clients.sqs())
        progress("1. requests per call")
        requests = emulated.requests_per_call(emu, fns, recorder)
        progress("2. fleet-size invariance (loads 10,000 nodes; slow on moto, see the note)")
        fleet = emulated.fleet_size(emu, fns, recorder)
    finally:
        emu.close()
    progress("4. sam build --cached --parallel")
    built = coldstart.artifacts()
    progress("4. cold start (fresh interpreters)")
    cold = coldstart.cold_start(ENV)
    duration = time.perf_counter() - started

    print()
    print(section_requests(requests), end="\n\n")
    print(section_fleet(fleet), end="\n\n")
    print(section_overhead(overhead), end="\n\n")
    print(section_cold(cold, built), end="\n\n")
    print(
        f"machine: Python {platform.python_version()}, {machine()['nproc']} cores; "
        f"bench took {duration:.0f} s; figures in {RESULTS.relative_to(RESULTS.parents[1])}"
    )

    results = {
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine(),
        "duration_seconds": duration,
        "requests_per_call": requests,
        "fleet_size_invariance": fleet,
        "handler_overhead": overhead,
        "cold_start": {"imports": cold, "artifacts": built},
    }
    RESULTS.write_text(json.dumps(_rounded(results), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # The emulator's 10,000-node table is millions of Python objects; freeing them one by one
    # at interpreter exit takes ~20 s and measures nothing. Everything is written by now.
    os._exit(code)

"""How far one warm request travels through the layer: the files of
``layers/common/reservations`` it passes and the calls it makes there, traced in-process
over moto (the second call of each case; the first warms the function as a container would).

    python -m bench.trace            # a reclaim, a PATCH and a read: files and calls
    python -m bench.trace --files    # ... and every file each passed, by calls

A measure of how much a newcomer must read to follow a write, in ``docs/layout.md``.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import threading
from collections import Counter
from contextlib import redirect_stdout
from pathlib import Path
from types import FrameType
from typing import Any

from moto import mock_aws

from bench.costs import OPERATOR, Bench, Case, spot_node
from bench.environment import ENV
from devstack import fleet_documents as f
from devstack import moto_costs
from devstack.api_events import list_units_event, reclaim_event, update_event
from devstack.functions import FakeContext, load_function

LAYER = Path(__file__).resolve().parents[1] / "layers" / "common" / "reservations"


class Trace:
    """Every call into a file of the layer (any thread), counted by file."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self._root = str(LAYER) + os.sep

    def __call__(self, frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(self._root):
            self.calls[frame.f_code.co_filename[len(self._root) :]] += 1

    def run(self, bench: Bench, case: Case) -> None:
        bench.restore()
        event = case.event
        handler = bench.handlers[case.function].lambda_handler
        with redirect_stdout(io.StringIO()):
            threading.setprofile(self)
            sys.setprofile(self)
            try:
                response = handler(event, FakeContext())
            finally:
                sys.setprofile(None)
                threading.setprofile(None)  # type: ignore[arg-type]
        if response["statusCode"] != case.status:
            raise RuntimeError(f"{case.name}: {response['statusCode']} {response.get('body')}")


def cases() -> list[Case]:
    broker, operator = f"Bearer {f.KEYS['broker'][0]}", f"Bearer {OPERATOR['key']}"
    reclaim = {"unitIds": ["0000:04:00.0"], "reason": "trace"}
    patch = {"contractRef": "traced"}
    return [
        Case("reclaim 1 unit", "reclaim", reclaim_event("node-8", "res-1", reclaim, broker)),
        Case(
            "PATCH a reservation",
            "update_reservation",
            update_event("node-8", "res-1", patch, operator),
        ),
        Case("list units", "list_units", list_units_event("node-8", broker)),
    ]


def run() -> list[dict[str, Any]]:
    """Each case: the layer's files it passed (and how many are the kernel's) and its calls."""
    os.environ.update(ENV)
    moto_costs.install()
    rows = []
    with mock_aws():
        bench = Bench(f.fleet([spot_node("node-8", 8)], [OPERATOR]))
        bench.handlers["update_reservation"] = load_function("update_reservation")
        for case in cases():
            bench.call(case)  # warm: the key cached, the clients made
            trace = Trace()
            trace.run(bench, case)
            files = trace.calls
            kernel = [name for name in files if name.startswith("kernel" + os.sep)]
            row = {"call": case.name, "files": len(files), "kernel_files": len(kernel)}
            rows.append(row | {"calls": files.total(), "by_file": dict(files.most_common())})
        bench.clients.reset()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", action="store_true", help="list the files each passed")
    args = parser.parse_args(argv)
    for row in run():
        print(f"{row['call']:<24} {row['files']:>3} files of the layer "
              f"({row['kernel_files']} the kernel's), {row['calls']} calls")  # fmt: skip
        if args.files:
            for name, count in row["by_file"].items():
                print(f"    {count:>5}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Runs inside the Lambda image (standard library only): one cold init of a handler, timed.

    python3.11 container_init.py <handler dir> <process start, ns since the epoch>

The shell takes the start time just before it starts the interpreter, so the figure runs
from process start to "handler module imported", as the runtime's Init phase does: the
runtime client is imported first, then the handler module from the python3.11 runtime's
import path. Prints one JSON line: init_ms and, of it, import_ms (the handler module alone).
"""

import importlib
import json
import sys
import time

task, started_ns = sys.argv[1], int(sys.argv[2])
# The python3.11 runtime's import path: the function, the layer, then the runtime's own SDK.
front = [task, "/opt/python", "/var/runtime"]
sys.path[:] = front + [p for p in sys.path if p not in front]

importlib.import_module("awslambdaric.bootstrap")
import_start = time.perf_counter()
importlib.import_module("app")
imported_ns = time.time_ns()
print(
    json.dumps(
        {
            "init_ms": (imported_ns - started_ns) / 1e6,
            "import_ms": (time.perf_counter() - import_start) * 1000,
        }
    )
)

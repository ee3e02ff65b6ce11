"""A function's handler module, loaded as Lambda would load it, and invoked in-process with a
Lambda context (the tests' and the benchmark's way in): an API function is
``functions/api/app.py`` with its ``ENDPOINT`` (``<slice>.<function>``, as its template
block sets it); any other is ``functions/<name>/app.py``.

Every function's file is called app.py, so each is loaded under its own module name
(``<name>_app``) instead of through sys.path.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"


def load_function(name: str) -> ModuleType:
    """The function ``name`` as module ``<name>_app`` (a fresh module on every call)."""
    own = FUNCTIONS / name / "app.py"
    if own.exists():
        return _load(name, own)
    from devstack.template import api_endpoints

    endpoint = api_endpoints().get(name)
    if endpoint is None:
        raise ImportError(f"no function {name!r} in {FUNCTIONS} nor among the endpoints")
    with _variable("ENDPOINT", endpoint):
        return _load(name, FUNCTIONS / "api" / "app.py")


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"{name}_app", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"no function {name!r} in {FUNCTIONS}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextmanager
def _variable(name: str, value: str) -> Iterator[None]:
    saved = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved


# The in-process tests' default deadline: one they cannot reach. Over moto on a loaded
# machine a call can take longer than any function's timeout (the sweeper's 60 s is the
# longest), and a deadline reached there would answer 503 for a call that is not slow in
# AWS; how long a call takes is measured by ``make bench``. Where the deadline is the
# subject, the test gives it (tests/kernel/test_request_deadline.py,
# tests/capacity/test_reclaim_slow_queue.py, tests/terminations/test_sweeper_handler.py).
UNREACHED_TIMEOUT_MS = 24 * 3600 * 1000


@dataclass
class FakeContext:
    """Lambda's context; its remaining time runs down from ``timeout_ms`` as Lambda's does
    (default: a day, a deadline no in-process test reaches; give the function's own
    timeout where the deadline is what is tested)."""

    function_name: str = "test-function"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000001"
    timeout_ms: int = UNREACHED_TIMEOUT_MS
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        elapsed_ms = (time.monotonic() - self.started) * 1000
        return max(0, int(self.timeout_ms - elapsed_ms))


@dataclass
class HttpResult:
    status: int
    headers: dict[str, str]
    body_text: str

    @property
    def body(self) -> Any:
        return json.loads(self.body_text)


def invoke(
    module: ModuleType, event: dict[str, Any], context: FakeContext | None = None
) -> HttpResult:
    """An API function's answer to ``event``, its headers' names lower-cased."""
    response = module.lambda_handler(event, context or FakeContext())
    headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    return HttpResult(response["statusCode"], headers, response.get("body") or "")

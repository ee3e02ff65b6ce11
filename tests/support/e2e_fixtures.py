"""End-to-end fixtures (a plugin of the root conftest, for the files marked ``e2e``): Docker and the Lambda image, one `sam build`, the demo fleet's AWS
emulator, the timings printed at the end of the run, and, under a failed test, its session
steps and the last lines of its stack's logs.

In CI (``CI=true``) these tests must run: a machine where Docker cannot be had fails them.
Elsewhere they skip, saying why.

They may run on several pytest-xdist workers (``make test`` runs two, a file each: most of
their time is waiting on clocks, notices and containers): the machine-wide set-up (Docker,
the image, `sam build`) is done by one worker at a time under a file lock, each stack has its
own ports and containers, and the timings and counts a worker measured reach the terminal
summary with its reports.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.e2e import (
    DEMO_FLEET,
    REPORTS,
    ROOT,
    STEPS,
    TIMINGS,
    Emulator,
    in_ci,
    local_aws_environment,
    machine_wide,
    running_emulator,
    sam_build_once,
)


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Docker runs and the Lambda image exists (started / built / installed if need be)."""
    env = local_aws_environment()
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env.setdefault("AUTO_INSTALL", "1")
    started = time.monotonic()
    with machine_wide("docker"):
        result = _docker_and_image(env)
    TIMINGS["docker + Lambda image ready"] = time.monotonic() - started
    if result.returncode == 0:
        return
    output = (result.stdout + result.stderr).strip()
    if in_ci():
        pytest.fail(
            "end-to-end tests must run in CI, but Docker / the Lambda image could not be set up "
            f"(exit {result.returncode}):\n{output}",
            pytrace=False,
        )
    reason = output.splitlines()[-1] if output else f"exit {result.returncode}"
    pytest.skip(f"Docker is not available: {reason}")


def _docker_and_image(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", "bash local/ensure-docker.sh && bash local/build-lambda-image.sh"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="session")
def sam_built(docker_ready: None) -> None:
    """`sam build --cached --parallel`, once per run (``sam_build_once``)."""
    started = time.monotonic()
    result = sam_build_once()
    if result is not None:
        TIMINGS["sam build --cached --parallel"] = time.monotonic() - started
    if result is not None and result.returncode != 0:
        pytest.fail(f"sam build failed:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")


@pytest.fixture(scope="module")
def demo_emulator(
    docker_ready: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Emulator]:
    """The emulator with the demo fleet, on a free port."""
    log = tmp_path_factory.mktemp("emulator") / "emulator.log"
    with running_emulator(DEMO_FLEET, log) as emulator:
        yield emulator


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the slow Docker tests last, so a broken unit test fails the run fast."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)


def pytest_runtest_setup(item: pytest.Item) -> None:
    STEPS.clear()  # each test's own


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under a failed end-to-end test: the session steps it ran (each command, how long it
    took, how it ended: the last one is most often the one that failed) and the last lines
    of the logs of each stack it used (make run's, the pump's and consumers', sam local's,
    the emulator's), so that the failure explains itself. And on an xdist worker, what its
    tests measured and counted goes with each test's last report to the run's terminal
    summary (``pytest_runtest_logreport``)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if call.when == "teardown" and _ON_A_WORKER:
        measured = {"timings": dict(TIMINGS), "reports": REPORTS[:]}
        report.user_properties.append((_MEASURED, measured))
        TIMINGS.clear()
        REPORTS.clear()
    if not report.failed or item.get_closest_marker("e2e") is None:
        return
    if STEPS.taken:
        report.sections.append(("session steps (seconds, outcome, command)", STEPS.report()))
    from tests.support.stack import Stack  # only here: it imports the local stack's modules

    funcargs = getattr(item, "funcargs", {})
    for name, value in funcargs.items():
        if isinstance(value, Stack):
            report.sections.append((f"the stack's logs ({name})", value.diagnostics()))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _ON_A_WORKER:
        return
    for name, measured in report.user_properties:
        if name == _MEASURED:
            TIMINGS.update(measured["timings"])
            REPORTS.extend(measured["reports"])


_MEASURED = "e2e measured"
_ON_A_WORKER = "PYTEST_XDIST_WORKER" in os.environ


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for report in REPORTS:
        terminalreporter.section("end-to-end counts")
        for line in report.splitlines():
            terminalreporter.write_line(line)
    if not TIMINGS:
        return
    terminalreporter.section("end-to-end timings")
    for name, seconds in TIMINGS.items():
        terminalreporter.write_line(f"{name:<55} {seconds:7.1f} s")

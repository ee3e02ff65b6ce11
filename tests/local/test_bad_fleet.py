"""A bad fleet file stops `make run` before it starts anything, naming the field."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devstack.fleet_documents import demo_fleet
from devstack.net import free_port, listening
from tests.support.e2e import ROOT, local_aws_environment

pytestmark = pytest.mark.e2e


def test_a_bad_fleet_fails_fast_naming_the_field_and_starts_nothing(tmp_path: Path) -> None:
    fleet = demo_fleet()
    fleet["nodes"][0]["units"][0]["sellable"] = "true"  # a string, not a JSON boolean
    fleet_file = tmp_path / "bad-fleet.json"
    fleet_file.write_text(json.dumps(fleet))
    api_port, emulator_port = free_port(), free_port()

    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "devstack.run"],
        cwd=ROOT,
        env=local_aws_environment(
            API_PORT=str(api_port),
            AWS_EMULATOR_PORT=str(emulator_port),
            FLEET=str(fleet_file),
            RUN_CONSUMERS="0",
        ),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    elapsed = time.monotonic() - started

    assert result.returncode != 0, result.stdout + result.stderr
    assert "nodes[0].units[0].sellable" in result.stderr, result.stderr
    assert elapsed < 20, f"took {elapsed:.1f} s: it should fail before starting anything"
    assert not listening(api_port)
    assert not listening(emulator_port)

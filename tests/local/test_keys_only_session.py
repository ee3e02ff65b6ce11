"""The session from an empty stack (docs/sessions.md), run as written: `make run` with only
keys (fleets/keys-only.json), then the session's own bash block against it (only the port
changed): register a node, reserve, lend, place, reclaim, watch the unit freed, end a
workload. Its output and the state it leaves are checked here."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reservations.kernel.times import parse_time
from tests.support.e2e import ROOT, TIMINGS, run_session
from tests.support.stack import REQUEST_TIMEOUT, Stack, patient, run_stack

pytestmark = pytest.mark.e2e
HEADING = "## From an empty stack, through the API alone"
SESSION_TIMEOUT = 240  # seconds; cold Lambda containers on a busy small machine


def session_block() -> str:
    """The second bash block under the heading (the first starts `make run`)."""
    text = (ROOT / "docs" / "sessions.md").read_text()
    section = text[text.index(HEADING) :]
    blocks = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert blocks[0].startswith("FLEET=fleets/keys-only.json make run")
    return blocks[1]


@pytest.fixture(scope="module")
def empty_stack(docker_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    fleet = json.loads((ROOT / "fleets" / "keys-only.json").read_text())
    assert fleet["nodes"] == []
    yield from run_stack(tmp_path_factory.mktemp("keys-only"), fleet, consumers=True)


def printed(output: str) -> tuple[list[Any], list[str]]:
    """What the session printed: the JSON answers in order, and the rest, word by word
    (curl prints a body without a newline, so the next output may follow on its line)."""
    decoder = json.JSONDecoder()
    answers: list[Any] = []
    words: list[str] = []
    position = 0
    while position < len(output):
        if output[position] in "{[":
            answer, position = decoder.raw_decode(output, position)
            answers.append(answer)
        elif output[position].isspace():
            position += 1
        else:
            word = re.match(r"[^\s{\[]+", output[position:])
            assert word is not None
            words.append(word.group())
            position += word.end()
    return answers, words


def units(stack: Stack, key: str) -> dict[str, dict[str, Any]]:
    response = stack.get_units("node-n1", key)
    assert response.status_code == 200, response.text
    return {unit["id"]: unit for unit in response.json()}


def test_the_session_from_an_empty_stack(empty_stack: Stack) -> None:
    session = session_block().replace("127.0.0.1:3000", f"127.0.0.1:{empty_stack.api_port}")
    started = time.monotonic()
    result = run_session(session, SESSION_TIMEOUT)
    TIMINGS["the session from an empty stack"] = time.monotonic() - started
    assert result.returncode == 0, result.stderr + empty_stack.diagnostics()
    answers, words = printed(result.stdout)
    node, release, placed_spot, placed_on_demand, refused, reclaim, freed, after, ended = answers
    reservation, status = words
    assert re.fullmatch(r"res-[a-z0-9]{20}", reservation)
    assert (node["id"], node["unitIds"]) == (
        "node-n1",
        ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0"],
    )
    assert (release["id"], release["status"], release["releasedUnitIds"]) == (
        reservation,
        "active",
        ["0000:04:00.0"],
    )
    assert (placed_spot["state"], placed_on_demand["state"]) == ("running", "running")
    assert refused["code"] == "units_unavailable"
    assert (reclaim["terminated"], reclaim["releasedUnitIds"]) == (["vm-1"], [])
    freed_04 = next(u for u in freed if u["id"] == "0000:04:00.0")
    assert (freed_04["state"], freed_04["reservationId"], freed_04["released"]) == (
        "free",
        reservation,
        False,
    )
    assert status == "204"
    assert {u["id"]: u["state"] for u in after} == dict.fromkeys(node["unitIds"], "free")
    # The ended VM still answers, with its own use: its units' GPUs over its time.
    assert (ended["id"], ended["state"]) == ("vm-2", "ended"), ended
    used = ms(ended["usedTo"]) - ms(ended["usedFrom"])
    assert used >= 0
    assert ended["gpuMs"] == used * len(ended["unitIds"]), ended  # one GPU a unit here


def test_the_session_left_the_workloads_where_they_belong(empty_stack: Stack) -> None:
    """Runs after the session: vm-1 terminated and gone, vm-2 ended, vm-3 never placed."""
    operator = "Bearer vl_local_only_operator"
    for workload in ("vm-1", "vm-2", "vm-3"):
        gone = patient.delete(
            f"{empty_stack.api}/v1/nodes/node-n1/workloads/{workload}",
            headers={"Authorization": operator},
            timeout=REQUEST_TIMEOUT,
        )
        assert gone.status_code == 404, (workload, gone.text)
    assert all(u["state"] == "free" for u in units(empty_stack, operator).values())


def ms(text: str) -> int:
    """A time in integer milliseconds since the epoch."""
    return (parse_time(text) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)

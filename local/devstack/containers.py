"""The Lambda containers of one ``make run``: labelled with the stack's id when ``sam local``
makes them (``devstack.sam_cli``), so that the stack finds and removes its own, and never
those of another stack of the same checkout (an end-to-end test's, a second ``make run``).
A ``sam local`` given a process id too (``LOCAL_PROCESS_ENV``: ``make soak`` gives one to
each start-lambda it starts) labels its containers with it as well, so that those a killed
process left are found and removed, and never those of the process started after it."""

from __future__ import annotations

import subprocess

# The label of every Lambda container of one `make run`; its value is the stack's id, which
# `make run` gives its children in LOCAL_STACK_ENV.
LOCAL_STACK_LABEL = "reservations.local-stack"
LOCAL_STACK_ENV = "RESERVATIONS_LOCAL_STACK"
LOCAL_PROCESS_LABEL = "reservations.local-process"
LOCAL_PROCESS_ENV = "RESERVATIONS_LOCAL_PROCESS"


def stack_containers(stack: str, process: str | None = None) -> list[str]:
    """Ids of the containers (any state) labelled as the stack's (and, given ``process``,
    as that ``sam local`` process's)."""
    filters = ["--filter", f"label={LOCAL_STACK_LABEL}={stack}"]
    if process is not None:
        filters += ["--filter", f"label={LOCAL_PROCESS_LABEL}={process}"]
    return subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", *filters], capture_output=True, text=True,
        check=False,
    ).stdout.split()  # fmt: skip

"""The Lambda containers of one ``make run``: labelled with the stack's id when ``sam local``
makes them (``devstack.sam_cli``), so that the stack finds and removes its own, and never
those of another stack of the same checkout (an end-to-end test's, a second ``make run``)."""

from __future__ import annotations

import subprocess

# The label of every Lambda container of one `make run`; its value is the stack's id, which
# `make run` gives its children in LOCAL_STACK_ENV.
LOCAL_STACK_LABEL = "reservations.local-stack"
LOCAL_STACK_ENV = "RESERVATIONS_LOCAL_STACK"


def stack_containers(stack: str) -> list[str]:
    """Ids of the containers (any state) labelled as the stack's."""
    return subprocess.run(
        ["docker", "ps", "-aq", "--no-trunc", "--filter", f"label={LOCAL_STACK_LABEL}={stack}"],
        capture_output=True, text=True, check=False,
    ).stdout.split()  # fmt: skip

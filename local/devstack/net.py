"""Ports and addresses of the local stack: free ports, waiting for a listener, Docker's bridge."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listening(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        return probe.connect_ex((host, port)) == 0


def wait_for_port(
    port: int,
    timeout: float,
    host: str = "127.0.0.1",
    alive: Callable[[], bool] = lambda: True,
) -> bool:
    """True once host:port listens; False at the timeout or as soon as ``alive()`` is false
    (the process that should open it has exited)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        if listening(port, host):
            return True
        time.sleep(0.5)
    return False


def docker_bridge_address() -> str | None:
    """The IPv4 address of Docker's default bridge (docker0), if there is one: where Lambda
    containers reach the host as host.docker.internal."""
    if shutil.which("ip") is None:
        return None
    output = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True, check=False
    ).stdout
    for field in output.split():
        if "/" in field and field[0].isdigit():
            return field.split("/")[0]
    return None

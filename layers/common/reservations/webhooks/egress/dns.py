"""Resolving a webhook's host name, within the attempt's time.

``getaddrinfo`` takes no timeout (the system resolver may retry for tens of seconds), so it
runs in a daemon thread the attempt waits for only as long as it has left.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Sequence

from reservations.webhooks.rules.urls import Address

# (host name, port, seconds left) -> every address the name has now; OSError (TimeoutError
# when out of time) when it has none.
Resolver = Callable[[str, int, float], Sequence[Address]]


def system_resolver(host: str, port: int, seconds: float) -> list[Address]:
    """The addresses of ``host``, in the order the system gives them, each once."""
    answers: list[list[Address] | OSError] = []

    def look_up() -> None:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            answers.append(error)
            return
        found = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
        answers.append(list(dict.fromkeys(found)))

    worker = threading.Thread(target=look_up, name="webhook-dns", daemon=True)
    worker.start()
    worker.join(seconds)
    if not answers:
        raise TimeoutError(f"resolving {host} took too long")
    answer = answers[0]
    if isinstance(answer, OSError):
        raise answer
    return answer

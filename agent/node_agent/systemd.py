"""systemd's notification protocol (sd_notify): one datagram to ``$NOTIFY_SOCKET``.

With ``Type=notify`` the unit is up once the agent says ``READY=1``; with ``WatchdogSec=``
systemd restarts it when no ``WATCHDOG=1`` arrives in time. Outside systemd (no
``NOTIFY_SOCKET``) every call does nothing.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger("node_agent")


def notify(message: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Send ``message`` (e.g. ``READY=1``) to systemd; whether it was sent."""
    address = environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
    except OSError as error:
        log.warning("could not notify systemd (%s): %s", message, error)
        return False
    return True


def watchdog_seconds(environ: Mapping[str, str] = os.environ) -> float | None:
    """The watchdog's interval systemd set for this process, if any."""
    usec = environ.get("WATCHDOG_USEC", "")
    pid = environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 1_000_000

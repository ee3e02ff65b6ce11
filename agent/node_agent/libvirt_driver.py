"""Stopping VMs through libvirt's own API (``libvirt-python``), never through virsh's text.

    stop(vm-17), grace 0:  running? -> destroy                          -> terminated
    stop(vm-17), grace N:  running? -> ACPI shutdown -> off within N s? -> terminated
                                                     -> still on at N s -> destroy -> terminated
    no such domain, or defined but shut off                             -> gone
    any other libvirt error (a lost connection, a refused destroy)      -> failed

With a reclaim's notice (the message's ``terminateAt``) the grace is clamped to the notice:
the consumer calls ``stop`` that long before ``terminateAt`` (``lead_seconds``), so the ACPI
request comes at ``terminateAt`` minus the grace and the destroy at ``terminateAt``, unless
the guest went off by itself. Without a notice (``terminateAt`` = ``requestedAt``) there is
no grace: destroyed at once. A message without ``terminateAt`` keeps the whole grace.

The domain is named by the workload id. "No such domain" is read from libvirt's error code
(``VIR_ERR_NO_DOMAIN``), never from a message's text. Only a shut-off domain runs nothing:
paused, crashed or suspended ones still hold their devices and are destroyed. After a failure
the connection is dropped and the next stop opens a new one, so a restarted libvirtd is
picked up again.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import libvirt

from node_agent.drivers import Clock, Result, clamped_grace, poll_until
from termination_messages import SpotTermination, WorkloadKind

log = logging.getLogger("node_agent")

Connect = Callable[[str], Any]


def _quiet(_context: object, _error: object) -> None:
    """libvirt prints every error on stderr by default; here each one is raised, and logged
    (or not) by whoever handles it."""


def domain_state(conn: Any, name: str) -> int | None:
    """The domain's state (``VIR_DOMAIN_*``), or None when libvirt has no such domain."""
    try:
        state, _reason = conn.lookupByName(name).state()
    except libvirt.libvirtError as error:
        if error.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
            return None
        raise
    return int(state)


def describe(error: libvirt.libvirtError) -> str:
    return f"{error.get_error_message() or error} (libvirt error {error.get_error_code()})"


class LibvirtDriver:
    """Shuts a domain down within the grace period, then destroys it."""

    name = "libvirt"
    kinds = frozenset({WorkloadKind.VM})

    def __init__(
        self,
        uri: str = "qemu:///system",
        grace_seconds: float = 0,
        clock: Clock | None = None,
        connect: Connect = libvirt.open,
        poll_every: float = 0.5,
    ) -> None:
        libvirt.registerErrorHandler(_quiet, None)
        self._uri = uri
        self._grace = grace_seconds
        self._clock = clock or Clock()
        self._connect = connect
        self._poll_every = poll_every
        self._conn: Any = None

    def lead_seconds(self, termination: SpotTermination) -> float:
        """The ACPI request comes this long before the deadline: the grace, clamped."""
        return clamped_grace(self._grace, termination)

    def stop(self, termination: SpotTermination) -> Result:
        grace, deadline = self._grace, f"the {self._grace:g} s deadline"
        if termination.terminate_at is not None:  # until the deadline, at most the grace
            grace = min(grace, self._clock.seconds_left(termination))
            deadline = f"terminateAt {termination.terminate_at.isoformat()}"
        try:
            return self._stop(self._connection(), termination.workload_id, grace, deadline)
        except libvirt.libvirtError as error:
            # Whatever it was, nothing says the domain stopped: never "terminated" or "gone".
            self._drop_connection()
            return Result("failed", f"libvirt {self._uri}: {describe(error)}")

    def _stop(self, conn: Any, name: str, grace: float, deadline: str) -> Result:
        state = domain_state(conn, name)
        if state is None:
            return Result("gone", f"no domain {name}")
        if state == libvirt.VIR_DOMAIN_SHUTOFF:
            return Result("gone", f"domain {name} is shut off")
        if grace > 0 and self._shut_down(conn, name, grace):
            return Result("terminated", f"domain {name} shut down within {grace:g} s")
        return self._destroy(conn, name, grace, deadline)

    def _running(self, conn: Any, name: str) -> bool:
        return domain_state(conn, name) not in (None, libvirt.VIR_DOMAIN_SHUTOFF)

    def _shut_down(self, conn: Any, name: str, grace: float) -> bool:
        """Ask the guest to power off (ACPI); whether it is off before the deadline."""
        try:
            conn.lookupByName(name).shutdown()
        except libvirt.libvirtError as error:
            if error.get_error_code() != libvirt.VIR_ERR_NO_DOMAIN:
                log.warning("shutdown of %s refused, destroying it: %s", name, describe(error))
                return False
        return poll_until(
            lambda: not self._running(conn, name), grace, self._clock, self._poll_every
        )

    def _destroy(self, conn: Any, name: str, grace: float, deadline: str) -> Result:
        try:
            conn.lookupByName(name).destroy()
        except libvirt.libvirtError as error:
            # It went off by itself between the look and the destroy: that is not a failure.
            benign = (libvirt.VIR_ERR_NO_DOMAIN, libvirt.VIR_ERR_OPERATION_INVALID)
            if error.get_error_code() not in benign or self._running(conn, name):
                raise
            return Result("terminated" if grace else "gone", f"domain {name} went off")
        at_deadline = f" at {deadline}" if grace else ""
        return Result("terminated", f"domain {name} destroyed{at_deadline}")

    def _connection(self) -> Any:
        if self._conn is None:
            self._conn = self._connect(self._uri)
        return self._conn

    def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(libvirt.libvirtError):
                conn.close()

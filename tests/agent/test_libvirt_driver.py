"""The libvirt driver against libvirt itself: its built-in test hypervisor (test:///default,
in this process, no libvirtd), where domains are defined, started and stopped for real.

What the test driver does with an ACPI shutdown (read from libvirt's test driver and seen
here): it applies the domain's <on_poweroff> at once. With ``destroy`` the domain is off
when shutdown() returns (a guest that honours ACPI); with ``restart`` it stays running (a
guest that ignores the request), so the grace period runs out and the deadline's destroy is
what stops it. The clock is the tests' own: waiting costs no time.
"""

from __future__ import annotations

import libvirt
import pytest

from node_agent.libvirt_driver import LibvirtDriver
from tests.agent.support import FakeClock, termination

RUNNING, SHUTOFF = libvirt.VIR_DOMAIN_RUNNING, libvirt.VIR_DOMAIN_SHUTOFF
BY_SHUTDOWN, BY_DESTROY = libvirt.VIR_DOMAIN_SHUTOFF_SHUTDOWN, libvirt.VIR_DOMAIN_SHUTOFF_DESTROYED


def driver(hypervisor, grace=0, clock=None, connect=None) -> LibvirtDriver:
    return LibvirtDriver(
        hypervisor.uri,
        grace_seconds=grace,
        clock=(clock or FakeClock()).clock(),
        connect=connect or libvirt.open,
    )


def test_without_grace_a_running_domain_is_destroyed_at_once(hypervisor):
    name = hypervisor.running()
    clock = FakeClock()
    result = driver(hypervisor, clock=clock).stop(termination(name))
    assert result.outcome == "terminated"
    assert hypervisor.state(name) == (SHUTOFF, BY_DESTROY)
    assert clock.slept == []


def test_with_grace_a_guest_that_honours_acpi_is_shut_down_not_destroyed(hypervisor):
    name = hypervisor.running(on_poweroff="destroy")
    clock = FakeClock()
    result = driver(hypervisor, grace=30, clock=clock).stop(termination(name))
    assert (result.outcome, result.detail) == ("terminated", f"domain {name} shut down within 30 s")
    assert hypervisor.state(name) == (SHUTOFF, BY_SHUTDOWN)
    assert clock.slept == []


def test_with_grace_a_guest_that_ignores_acpi_runs_until_the_deadline_then_is_destroyed(
    hypervisor,
):
    name = hypervisor.running(on_poweroff="restart")
    seen = []
    clock = FakeClock(on_sleep=lambda: seen.append(hypervisor.state(name)[0]))
    result = driver(hypervisor, grace=30, clock=clock).stop(termination(name))
    assert (result.outcome, result.detail) == (
        "terminated",
        f"domain {name} destroyed at the 30 s deadline",
    )
    assert sum(clock.slept) == 30  # the whole grace period, and not a moment more
    assert set(seen) == {RUNNING}  # it was running throughout: only the destroy stopped it
    assert hypervisor.state(name) == (SHUTOFF, BY_DESTROY)


@pytest.mark.parametrize("grace", [0, 30])
def test_a_domain_libvirt_does_not_know_is_gone(hypervisor, grace):
    result = driver(hypervisor, grace=grace).stop(termination("vm-never-defined"))
    assert result.outcome == "gone"


def test_a_defined_domain_that_is_shut_off_is_gone(hypervisor):
    name = hypervisor.running()
    hypervisor.conn.lookupByName(name).destroy()
    assert driver(hypervisor).stop(termination(name)).outcome == "gone"


def test_a_transient_domain_that_shut_down_is_gone_once_it_vanished(hypervisor):
    name = hypervisor.running(transient=True)
    first = driver(hypervisor, grace=30).stop(termination(name))
    assert first.outcome == "terminated"
    assert hypervisor.state(name) is None  # a transient domain vanishes when it stops
    assert driver(hypervisor, grace=30).stop(termination(name)).outcome == "gone"


def test_a_paused_domain_still_holds_its_devices_and_is_destroyed(hypervisor):
    name = hypervisor.running()
    hypervisor.conn.lookupByName(name).suspend()
    assert driver(hypervisor).stop(termination(name)).outcome == "terminated"
    assert hypervisor.state(name) == (SHUTOFF, BY_DESTROY)


def test_a_connection_lost_mid_stop_is_failed_then_the_retry_reconnects_and_stops_it(
    hypervisor,
):
    name = hypervisor.running(on_poweroff="restart")
    opened = []

    def connect(uri):
        opened.append(libvirt.open(uri))
        return opened[-1]

    def lose_the_connection():
        if len(clock.slept) == 1:  # during the grace period, after the ACPI request
            opened[0].close()

    clock = FakeClock(on_sleep=lose_the_connection)
    stopping = driver(hypervisor, grace=30, clock=clock, connect=connect)
    lost = stopping.stop(termination(name))
    assert lost.outcome == "failed"
    assert f"libvirt error {libvirt.VIR_ERR_INVALID_CONN}" in (lost.detail or "")
    assert hypervisor.state(name)[0] == RUNNING  # never said terminated: it still runs
    retried = stopping.stop(termination(name))  # the message comes back
    assert retried.outcome == "terminated"
    assert len(opened) == 2
    assert hypervisor.state(name) == (SHUTOFF, BY_DESTROY)


def test_an_unreachable_libvirtd_is_failed(tmp_path):
    uri = f"test+unix:///default?socket={tmp_path}/libvirt-sock"
    result = LibvirtDriver(uri).stop(termination("vm-1"))
    assert result.outcome == "failed"
    assert f"libvirt error {libvirt.VIR_ERR_SYSTEM_ERROR}" in (result.detail or "")


def test_gone_is_read_from_the_error_code_never_from_the_text(tmp_path):
    """libvirt's own error, whose text says "Domain not found" (the socket's name), but
    whose code is a system error: the domain may well run."""
    (tmp_path / "Domain not found").mkdir()
    uri = f"test+unix:///default?socket={tmp_path}/Domain%20not%20found/sock"
    result = LibvirtDriver(uri).stop(termination("vm-1"))
    assert "Domain not found" in (result.detail or "")
    assert result.outcome == "failed"

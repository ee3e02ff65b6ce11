"""Resolving a webhook's host within the attempt's time: every address once, in the
system's order, without an interface scope; the system's error as it is; and a look-up that
takes longer than the time left is given up on (its thread, a daemon, left to finish)."""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any

import pytest

from reservations.webhooks.egress import dns

pytestmark = pytest.mark.disable_socket


def info(address: str) -> tuple[Any, ...]:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return (family, socket.SOCK_STREAM, 6, "", (address, 443))


def test_every_address_once_in_the_systems_order_without_its_scope(monkeypatch):
    asked: list[tuple[Any, ...]] = []

    def getaddrinfo(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        asked.append((args, kwargs))
        return [info("203.0.113.9"), info("2001:db8::1"), info("203.0.113.9"),
                info("fe80::1%eth0"), info("198.51.100.7")]  # fmt: skip

    monkeypatch.setattr(dns.socket, "getaddrinfo", getaddrinfo)
    found = dns.system_resolver("hooks.example.com", 8443, 5.0)
    assert found == [
        ipaddress.ip_address("203.0.113.9"),
        ipaddress.ip_address("2001:db8::1"),
        ipaddress.ip_address("fe80::1"),
        ipaddress.ip_address("198.51.100.7"),
    ]
    assert asked == [(("hooks.example.com", 8443), {"type": socket.SOCK_STREAM})]


def test_a_name_without_addresses_raises_the_systems_error(monkeypatch):
    error = socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def getaddrinfo(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        raise error

    monkeypatch.setattr(dns.socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(socket.gaierror) as raised:
        dns.system_resolver("nowhere.example.com", 443, 5.0)
    assert raised.value is error


def test_a_look_up_slower_than_the_time_left_is_given_up_on_in_a_daemon_thread(monkeypatch):
    release, began = threading.Event(), threading.Event()
    started: list[threading.Thread] = []

    def getaddrinfo(*args: Any, **kwargs: Any) -> list[tuple[Any, ...]]:
        started.append(threading.current_thread())
        began.set()
        release.wait(2)  # 200 times the time left; a resolver that waits it out fails
        return [info("203.0.113.9")]

    monkeypatch.setattr(dns.socket, "getaddrinfo", getaddrinfo)
    try:
        with pytest.raises(TimeoutError) as raised:
            dns.system_resolver("slow.example.com", 443, 0.01)
    finally:
        release.set()
    assert str(raised.value) == "resolving slow.example.com took too long"
    assert began.wait(30)
    [worker] = started
    assert (worker.name, worker.daemon) == ("webhook-dns", True)
    worker.join(30)

"""The host of a webhook URL, exactly as the 400 says what is wrong with it: each refusal's
own words (a client reads them), and the length and label bounds at their edges."""

from __future__ import annotations

import ipaddress

import pytest

from reservations.webhooks.rules.urls import SendTarget, address_problem, send_target, url_problem

pytestmark = pytest.mark.disable_socket

LABEL = "a" * 63
# 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 characters: the longest name DNS takes.
LONGEST = f"{LABEL}.{LABEL}.{LABEL}.{'b' * 61}"

HOST_PROBLEMS = [
    ("https:///in", "must name a host"),
    ("https://[::1]/in", "must name a host, not an IP address"),
    # Bracketed but no colon: Python reads "v1.abc" as the host of an IPvFuture literal.
    ("https://[v1.abc]/in", "must name a host, not an IP address"),
    ("https://1.2.3.4./in", "must name a host, not an IP address (in any spelling)"),
    ("https://hooks.0x10/in", "must name a host, not an IP address (in any spelling)"),
    (
        "https://hooks..example.com/in",
        "must name a valid host (letters, digits and hyphens; IDNs as xn--)",
    ),
    (
        f"https://{LONGEST}c/in",
        "must name a valid host (letters, digits and hyphens; IDNs as xn--)",
    ),
    ("https://intranet/in", "must name a fully qualified host (with a dot)"),
    ("https://intranet./in", "must name a fully qualified host (with a dot)"),
    ("https://api.localhost/in", "must not name localhost"),
]


def test_each_host_refusal_says_exactly_why():
    for url, problem in HOST_PROBLEMS:
        assert url_problem(url) == problem, url


def test_the_longest_name_and_the_shortest_qualified_one_are_taken_without_a_trailing_dot():
    assert len(LONGEST) == 253
    assert send_target(f"https://{LONGEST}/in") == SendTarget(LONGEST, 443, "/in")
    assert send_target("https://example.com./in") == SendTarget("example.com", 443, "/in")
    assert send_target("https://a.b/") == SendTarget("a.b", 443, "/")


URL_PROBLEMS = [
    ("https://hooks.example.com/" + "a" * 2100, "must be at most 2048 characters"),
    (
        "https://hooks.example.com /in",
        "must be ASCII without spaces, control characters or backslashes",
    ),
    (
        "https://b\u00fccher.example/in",
        "must be ASCII without spaces, control characters or backslashes",
    ),
    ("https://hooks.example.com/in#x", "must not have a fragment (#...)"),
    ("http://hooks.example.com/in", "must start with https://"),
    ("https://user@hooks.example.com/in", "must not contain user info (user:password@)"),
    ("https://hooks.example.com:0/in", "must have a port from 1 to 65535"),
    ("https://hooks.example.com:99999/in", "must have a port from 1 to 65535"),
    ("https://hooks.example.com:1023/in", "must use port 443 or one from 1024 to 65535"),
]
LOCAL_PROBLEMS = [
    ("http://127.0.0.1/in", "must name the local receiver's port (http://127.0.0.1:<port>)"),
    ("http://127.0.0.1:0/in", "must have a port from 1 to 65535"),
    ("http://me@127.0.0.1:8765/in", "must not contain user info (user:password@)"),
]


def test_each_url_refusal_says_exactly_why():
    for url, problem in URL_PROBLEMS:
        assert url_problem(url) == problem, url
    for url, problem in LOCAL_PROBLEMS:
        assert url_problem(url, allow_local=True) == problem, url


def test_ports_and_paths_at_their_edges():
    assert send_target("https://a.example.com:1024").port == 1024
    assert send_target("https://a.example.com:65535/x?").path == "/x"
    assert send_target("https://a.example.com?q=1").path == "/?q=1"
    local = send_target("http://127.0.0.1:1/a?b=c", allow_local=True)
    assert local == SendTarget("127.0.0.1", 1, "/a?b=c", local=True)
    assert (local.tls, local.host_header) == (False, "127.0.0.1:1")
    https = send_target("https://a.example.com:8443/")
    assert (https.tls, https.host_header) == (True, "a.example.com:8443")
    assert send_target("https://a.example.com:443/").host_header == "a.example.com"


ADDRESS_PROBLEMS = [
    ("0.0.0.0", "an unspecified address"),
    ("::", "an unspecified address"),
    ("::1", "a loopback address"),
    ("::2", "an IPv4-compatible IPv6 address"),
    ("::ffff:8.8.8.8", "an IPv4-mapped IPv6 address"),
    ("64:ff9b::808:808", "a NAT64 address (an IPv4 address in disguise)"),
    ("2002:a00:1::1", "a 6to4 address carrying a private address"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo address (an IPv4 address in disguise)"),
    ("fec0::1", "a site-local address"),
    ("169.254.169.254", "a link-local address (the cloud metadata service's range)"),
    ("224.0.0.1", "a multicast address"),
    ("172.16.0.1", "a private address"),
    ("fd00::1", "a private address"),
    ("100.64.0.1", "a shared (carrier-grade NAT) address"),
    ("192.0.2.1", "a reserved address"),
    ("240.0.0.1", "a reserved address"),
]


def test_each_address_refusal_says_exactly_why():
    for address, problem in ADDRESS_PROBLEMS:
        assert address_problem(ipaddress.ip_address(address)) == problem, address

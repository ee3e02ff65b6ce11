"""No request forgery, the pure half: which URLs may be subscribed and which addresses may be
called. Every refused case is a row."""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path

import pytest

from reservations.webhooks.models.api import MAX_URL_LENGTH, URL_CHARACTERS
from reservations.webhooks.rules.urls import (
    SendTarget,
    address_problem,
    send_target,
    url_problem,
)

pytestmark = pytest.mark.disable_socket
ROOT = Path(__file__).resolve().parents[2]

# --- subscribe time: the URL itself --------------------------------------------------------

REFUSED_URLS = [
    # not https
    ("http://hooks.example.com/in", "must start with https://"),
    ("ftp://hooks.example.com/in", "must start with https://"),
    ("hooks.example.com/in", "must start with https://"),
    ("//hooks.example.com/in", "must start with https://"),
    ("HTTPS://", "must name a host"),
    ("https:///path", "must name a host"),
    # IP literals, in every spelling a URL parser reads as an address
    ("https://127.0.0.1/in", "not an IP address"),
    ("https://10.0.0.8/in", "not an IP address"),
    ("https://93.184.216.34/in", "not an IP address"),
    ("https://2130706433/in", "not an IP address"),  # 127.0.0.1 in decimal
    ("https://0177.0.0.1/in", "not an IP address"),  # octal
    ("https://0x7f.1/in", "not an IP address"),  # hex, shortened
    ("https://0x7f000001/in", "not an IP address"),
    ("https://127.1/in", "not an IP address"),
    ("https://169.254.169.254/latest/meta-data/", "not an IP address"),
    ("https://1.2.3.4./in", "not an IP address"),  # trailing dot
    ("https://hooks.0x10/in", "not an IP address"),  # ends in a number: WHATWG reads an IPv4
    ("https://[::1]/in", "not an IP address"),
    ("https://[::ffff:127.0.0.1]/in", "not an IP address"),
    ("https://[fe80::1%25eth0]/in", "not an IP address"),
    ("https://%31%32%37.0.0.1/in", "not an IP address"),
    # user info: what a reader takes for the host is not
    ("https://user:pass@hooks.example.com/in", "user info"),
    ("https://hooks.example.com@169.254.169.254/in", "user info"),
    ("https://hooks.example.com:443@evil.example.net/", "user info"),
    # ports: 443 or an unprivileged one
    ("https://hooks.example.com:22/in", "port 443 or one from 1024"),
    ("https://hooks.example.com:25/in", "port 443 or one from 1024"),
    ("https://hooks.example.com:80/in", "port 443 or one from 1024"),
    ("https://hooks.example.com:0/in", "port from 1 to 65535"),
    ("https://hooks.example.com:65536/in", "port from 1 to 65535"),
    ("https://hooks.example.com:http/in", "port from 1 to 65535"),
    # names that are not public host names
    ("https://localhost/in", "fully qualified"),
    ("https://api.localhost/in", "localhost"),
    ("https://hooks.api.localhost/in", "must not name localhost"),
    ("https://intranet/in", "fully qualified"),
    ("https://hooks_in.example.com/in", "valid host"),
    ("https://-hooks.example.com/in", "valid host"),
    ("https://hooks..example.com/in", "valid host"),
    ("https://" + "a" * 64 + ".example.com/in", "valid host"),
    ("https://b\u00fccher.example/in", "ASCII"),
    # ambiguous spellings
    ("https://hooks.example.com\\@evil.example.net/", "backslashes"),
    ("https://hooks.example.com /in", "spaces"),
    ("https://hooks.example.com/in\r\nX-Injected: 1", "control characters"),
    ("https://hooks.example.com/in#part", "fragment"),
    ("https://hooks.example.com/in#", "fragment"),
    ("https://hooks.example.com/" + "a" * 2100, "at most 2048"),
]


LONGEST = "https://hooks.example.com/" + "a" * (2048 - len("https://hooks.example.com/"))


@pytest.mark.parametrize(("url", "problem"), REFUSED_URLS)
def test_a_url_that_is_no_public_https_host_name_is_refused_naming_why(url, problem):
    found = url_problem(url)
    assert found is not None, url
    assert problem in found, (url, found)


@pytest.mark.parametrize(("url", "problem"), REFUSED_URLS)
def test_the_same_urls_are_refused_at_send_time_with_the_local_allowance_on(url, problem):
    # The allowance opens http://127.0.0.1:<port> only: none of these gets through it.
    with pytest.raises(ValueError, match=r".") as raised:
        send_target(url, allow_local=True)
    assert str(raised.value)


@pytest.mark.parametrize(
    ("url", "target"),
    [
        ("https://hooks.example.com/in", SendTarget("hooks.example.com", 443, "/in")),
        ("https://Hooks.Example.COM", SendTarget("hooks.example.com", 443, "/")),
        ("https://hooks.example.com.:8443/a?b=c", SendTarget("hooks.example.com", 8443, "/a?b=c")),
        ("https://xn--bcher-kva.example/in", SendTarget("xn--bcher-kva.example", 443, "/in")),
        ("https://hooks.example.com:443/", SendTarget("hooks.example.com", 443, "/")),
        ("https://1hooks.example.com/", SendTarget("1hooks.example.com", 443, "/")),
        (
            "https://hooks.localhost.example.com/",
            SendTarget("hooks.localhost.example.com", 443, "/"),
        ),
        (
            LONGEST,
            SendTarget("hooks.example.com", 443, LONGEST.removeprefix("https://hooks.example.com")),
        ),
    ],
)
def test_a_public_https_host_name_is_taken(url, target):
    assert url_problem(url) is None
    assert send_target(url) == target


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8765/hooks",
        "http://127.0.0.1:8765",
    ],
)
def test_the_local_allowance_takes_http_127_0_0_1_with_a_port_only_when_on(url):
    assert url_problem(url) == "must start with https://"
    target = send_target(url, allow_local=True)
    assert target.local
    assert (target.host, target.port) == ("127.0.0.1", 8765)
    assert target.host_header == "127.0.0.1:8765"


def test_send_time_refuses_the_local_receiver_unless_the_allowance_is_on():
    with pytest.raises(ValueError, match="https") as refused:
        send_target("http://127.0.0.1:8765/hooks")
    assert str(refused.value) == "must start with https://"
    # Subscribe time too: the allowance is off unless its caller turns it on.
    assert url_problem("http://127.0.0.1:8765/hooks") == "must start with https://"


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1/hooks", "port"),
        ("http://localhost:8765/hooks", "https://"),
        ("http://127.1:8765/hooks", "https://"),
        ("http://2130706433:8765/hooks", "https://"),
        ("http://127.0.0.2:8765/hooks", "https://"),
        ("http://[::1]:8765/hooks", "https://"),
        ("http://user@127.0.0.1:8765/hooks", "user info"),
        ("http://10.0.0.1:8765/hooks", "https://"),
        ("https://127.0.0.1:8765/hooks", "IP address"),
    ],
)
def test_the_local_allowance_is_that_one_spelling_and_nothing_else(url, problem):
    found = url_problem(url, allow_local=True)
    assert found is not None, url
    assert problem in found, (url, found)


# --- send time: the addresses the name has now ----------------------------------------------

REFUSED_ADDRESSES = [
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "reserved"),
    ("::", "unspecified"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("::1", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    ("169.254.169.254", "link-local"),  # the cloud's metadata service
    ("169.254.0.1", "link-local"),
    ("fe80::1", "link-local"),
    ("fec0::1", "site-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),
    ("100.64.0.1", "shared"),
    ("100.127.255.254", "shared"),
    ("255.255.255.255", "reserved"),  # broadcast
    ("240.0.0.1", "reserved"),
    ("192.0.0.1", "reserved"),  # IETF protocol assignments: not global
    ("192.0.2.1", "reserved"),  # documentation
    ("198.18.0.1", "reserved"),  # benchmarking
    ("2001:db8::1", "reserved"),  # documentation
    ("100::1", "reserved"),  # discard-only
    ("::ffff:127.0.0.1", "IPv4-mapped"),
    ("::ffff:10.0.0.1", "IPv4-mapped"),
    ("::ffff:169.254.169.254", "IPv4-mapped"),
    ("::ffff:8.8.8.8", "IPv4-mapped"),  # a public one too: no IPv4 address in disguise
    ("::127.0.0.1", "IPv4-compatible"),
    ("::10.0.0.1", "IPv4-compatible"),
    ("64:ff9b::7f00:1", "NAT64"),  # 127.0.0.1 through NAT64
    ("64:ff9b::a9fe:a9fe", "NAT64"),  # 169.254.169.254 through NAT64
    ("64:ff9b:1::a00:1", "NAT64"),  # the local-use NAT64 prefix
    ("2002:7f00:1::1", "6to4 address carrying a loopback"),
    ("2002:a00:1::1", "6to4 address carrying a private"),
    ("2002:a9fe:a9fe::1", "6to4 address carrying a link-local"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
]


@pytest.mark.parametrize(("address", "problem"), REFUSED_ADDRESSES)
def test_an_address_that_is_not_global_unicast_is_refused_naming_why(address, problem):
    found = address_problem(ipaddress.ip_address(address))
    assert found is not None, address
    assert problem in found, (address, found)


@pytest.mark.parametrize(
    "address",
    ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700::1111", "2002:808:808::1", "2a00:1450::1"],
)
def test_a_global_unicast_address_may_be_called(address):
    assert address_problem(ipaddress.ip_address(address)) is None


# --- the request schema says the character rule -------------------------------------------


def test_the_documents_url_pattern_is_the_character_rule_the_subscribe_parser_applies():
    """A url the schema's pattern takes is never refused for its characters, and one it
    refuses is refused by the parser too: the two agree on every character (ASCII, Latin,
    the line and byte-order marks), anywhere in a subscribable URL."""
    document = json.loads((ROOT / "docs" / "openapi.json").read_text())
    declared = document["components"]["schemas"]["SubscribeRequest"]["properties"]["url"]
    assert (declared["pattern"], declared["maxLength"]) == (URL_CHARACTERS, MAX_URL_LENGTH)
    characters = [chr(code) for code in range(0x250)] + ["\u2028", "\ufeff", "\U0001f600"]
    for character in characters:
        for url in (f"https://hooks.example.com/in{character}x", f"https://a.example/{character}"):
            # fullmatch: ECMA-262's $ is the text's end (Python's search would also take
            # a trailing newline)
            valid = re.fullmatch(declared["pattern"], url) is not None
            assert valid == (url_problem(url) is None), (hex(ord(character)), url_problem(url))

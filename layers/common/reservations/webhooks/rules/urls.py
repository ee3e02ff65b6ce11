"""No request forgery: which webhook URLs may be subscribed, and which addresses may be
called. Pure rules; resolving a name and connecting are the sender's (``egress``).

A subscribed ``url`` is ``https://`` with a host *name* (never an address, in any spelling),
no user info, no fragment, and port 443 or an unprivileged one. At send time the name is
resolved again, every time, and each address it gives must be a global unicast one:

=====================================  ===============================================
refused address                        why
=====================================  ===============================================
0.0.0.0/8, ::                          unspecified ("this host")
127.0.0.0/8, ::1                       loopback
10/8, 172.16/12, 192.168/16, fc00::/7  private (RFC 1918, unique local)
169.254/16, fe80::/10                  link-local (the cloud's metadata service too)
fec0::/10                              site-local (deprecated, still routed inside sites)
224.0.0.0/4, ff00::/8                  multicast
100.64/10                              shared address space (carrier-grade NAT)
::ffff:0:0/96, ::/96                   IPv4-mapped and IPv4-compatible IPv6: an IPv4
                                       address in disguise
64:ff9b::/96, 64:ff9b:1::/48           NAT64: an IPv4 address in disguise
2002::/16 carrying a refused IPv4      6to4 to a private, loopback ... address
2001::/32                              Teredo (carries an obfuscated IPv4 address)
anything else not global               reserved, documentation, benchmarking, broadcast
=====================================  ===============================================

The local stack alone may allow ``http://127.0.0.1:<port>`` (a stack parameter that is off
by default); nothing else about these rules changes with it.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from reservations.webhooks.models.api import MAX_URL_LENGTH

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# 443, or a port no well-known service listens on: a subscription must not make the
# service talk to a mail, SSH or database port of some host.
HTTPS_PORT = 443
LOWEST_OTHER_PORT = 1024
LOCAL_HOST = "127.0.0.1"

_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# WHATWG URL parsing reads a host whose last label is a number (decimal, octal or hex, as
# in 2130706433, 0177.0.0.1 or 0x7f.1) as an IPv4 address: such a host is an address.
_NUMERIC_LABEL = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)")
# Nothing a browser or a server could read two ways: spaces, controls, backslashes (with
# non-ASCII and "#", what the request schema's pattern, models.api.URL_CHARACTERS, rules out).
_UNSAFE = re.compile(r"[\x00-\x20\x7f\\]")

_PRIVATE_V4 = tuple(
    ipaddress.IPv4Network(net) for net in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
)
_SHARED_V4 = ipaddress.IPv4Network("100.64.0.0/10")
_SITE_LOCAL_V6 = ipaddress.IPv6Network("fec0::/10")
_UNIQUE_LOCAL_V6 = ipaddress.IPv6Network("fc00::/7")
_COMPATIBLE_V6 = ipaddress.IPv6Network("::/96")
_NAT64_V6 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_SIX_TO_FOUR_V6 = ipaddress.IPv6Network("2002::/16")
_TEREDO_V6 = ipaddress.IPv6Network("2001::/32")


@dataclass(frozen=True, slots=True)
class SendTarget:
    """Where a delivery goes: the host name (sent as SNI and ``Host``), the port, the path
    with its query, and whether it is the local stack's plain-HTTP loopback receiver."""

    host: str
    port: int
    path: str
    local: bool = False

    @property
    def tls(self) -> bool:
        return not self.local

    @property
    def host_header(self) -> str:
        default = HTTPS_PORT if self.tls else 80
        return self.host if self.port == default else f"{self.host}:{self.port}"


def url_problem(url: str, allow_local: bool = False) -> str | None:
    """Why ``url`` may not be subscribed (the 400's problem for the field ``url``), or None."""
    try:
        send_target(url, allow_local)
    except ValueError as problem:
        return str(problem)
    return None


def send_target(url: str, allow_local: bool = False) -> SendTarget:
    """Where ``url`` sends to; ValueError saying what is wrong with it. The same rule at
    subscribe time and at send time (a stored URL is checked again before every attempt)."""
    if len(url) > MAX_URL_LENGTH:
        raise ValueError(f"must be at most {MAX_URL_LENGTH} characters")
    if _UNSAFE.search(url) or not url.isascii():
        raise ValueError("must be ASCII without spaces, control characters or backslashes")
    if "#" in url:
        raise ValueError("must not have a fragment (#...)")
    parts = urlsplit(url)
    if allow_local and parts.scheme == "http" and parts.hostname == LOCAL_HOST:
        return _local_target(parts)
    if parts.scheme != "https":
        raise ValueError("must start with https://")
    _check_authority(parts)
    host = _host_name(parts)
    return SendTarget(host=host, port=_port(parts), path=_path(parts))


def _local_target(parts: SplitResult) -> SendTarget:
    """``http://127.0.0.1:<port>/...``, the local stack's allowance, exactly so spelled."""
    _check_authority(parts)
    if parts.netloc.split(":")[0] != LOCAL_HOST:
        raise ValueError(f"the local receiver must be spelled {LOCAL_HOST}")
    port = _explicit_port(parts)
    if port is None:
        raise ValueError(f"must name the local receiver's port (http://{LOCAL_HOST}:<port>)")
    return SendTarget(host=LOCAL_HOST, port=port, path=_path(parts), local=True)


def _check_authority(parts: SplitResult) -> None:
    if "@" in parts.netloc:
        raise ValueError("must not contain user info (user:password@)")


def _host_name(parts: SplitResult) -> str:
    """The host, which must be a DNS name of at least two labels, and not an address."""
    host = parts.hostname or ""
    if not host:
        raise ValueError("must name a host")
    if parts.netloc.startswith("[") or ":" in host:
        raise ValueError("must name a host, not an IP address")
    labels = host.removesuffix(".").split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        raise ValueError("must name a host, not an IP address (in any spelling)")
    if len(host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError("must name a valid host (letters, digits and hyphens; IDNs as xn--)")
    if len(labels) < 2:
        raise ValueError("must name a fully qualified host (with a dot)")
    if labels[-1] == "localhost":
        raise ValueError("must not name localhost")
    return host.removesuffix(".")


def _explicit_port(parts: SplitResult) -> int | None:
    try:
        port = parts.port
    except ValueError:
        raise ValueError("must have a port from 1 to 65535") from None
    if port == 0:
        raise ValueError("must have a port from 1 to 65535")
    return port


def _port(parts: SplitResult) -> int:
    port = _explicit_port(parts)
    if port is None or port == HTTPS_PORT:
        return HTTPS_PORT
    if port < LOWEST_OTHER_PORT:
        raise ValueError(f"must use port {HTTPS_PORT} or one from {LOWEST_OTHER_PORT} to 65535")
    return port


def _path(parts: SplitResult) -> str:
    path = parts.path or "/"
    return f"{path}?{parts.query}" if parts.query else path


def address_problem(address: Address) -> str | None:
    """Why the sender may not connect to ``address`` (for the attempt's error and the log),
    or None for a global unicast address."""
    if isinstance(address, ipaddress.IPv6Address):
        disguised = _ipv6_problem(address)
        if disguised is not None:
            return disguised
    return _common_problem(address)


def _ipv6_problem(address: ipaddress.IPv6Address) -> str | None:
    """IPv6 forms that carry an IPv4 address, and the deprecated site-local range."""
    if address.ipv4_mapped is not None:
        return "an IPv4-mapped IPv6 address"
    if address in _COMPATIBLE_V6 and int(address) > 1:  # :: and ::1 are named below
        return "an IPv4-compatible IPv6 address"
    if any(address in net for net in _NAT64_V6):
        return "a NAT64 address (an IPv4 address in disguise)"
    if address in _SIX_TO_FOUR_V6 and address.sixtofour is not None:
        carried = _common_problem(address.sixtofour)
        return None if carried is None else f"a 6to4 address carrying {carried}"
    if address in _TEREDO_V6:
        return "a Teredo address (an IPv4 address in disguise)"
    if address in _SITE_LOCAL_V6:
        return "a site-local address"
    return None


def _common_problem(address: Address) -> str | None:
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (the cloud metadata service's range)"
    if address.is_multicast:
        return "a multicast address"
    if _is_private(address):
        return "a private address"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED_V4:
        return "a shared (carrier-grade NAT) address"
    if address.is_reserved or not address.is_global:
        return "a reserved address"
    return None


def _is_private(address: Address) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        return any(address in net for net in _PRIVATE_V4)
    return address in _UNIQUE_LOCAL_V6

"""The host of a webhook URL, exactly as the 400 says what is wrong with it: each refusal's
own words (a client reads them), and the length and label bounds at their edges."""

from __future__ import annotations

from reservations.rules.webhook_urls import SendTarget, send_target, url_problem

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

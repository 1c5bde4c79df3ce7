"""A server answers only to its own names: the Host and Origin checks against DNS rebinding, and the security
headers on every answer.

A page at `http://evil.example:PORT`, whose name its owner points at 127.0.0.1, is its own origin for the
browser: it may send requests to a loopback server and read the answers, unless the server refuses requests
that name another host (421) or come from a page of another origin (403). Checked on the policy alone, on a
real `chronokg serve http` (IPv4 and IPv6 loopback, `--allowed-host`), and in Chromium with the rebinding
simulated by the browser's resolver (`--host-resolver-rules`).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from chronokg.serve.hosts import HostPolicy
from tests.serve_helpers import serve

CHEAP = {"subject": "un-secretary-general"}


# --- the policy alone -----------------------------------------------------------------------------------------

def test_the_policy_answers_its_address_and_loopback_names_at_its_port() -> None:
    p = HostPolicy.for_bind("127.0.0.1", 8765)
    for good in (b"127.0.0.1:8765", b"localhost:8765", b"LOCALHOST:8765", b"[::1]:8765", b"localhost.:8765"):
        assert p.host_ok(good), good
    for bad in (b"evil.example:8765", b"127.0.0.1:8766", b"localhost", b"127.0.0.2:8765", b"evil.example",
                b"localhost.evil.example:8765", b"127.0.0.1:8765@evil.example", b"", b"[::1", b"127.0.0.1:x"):
        assert not p.host_ok(bad), bad
    assert not p.host_ok(None)  # no Host at all names nobody
    six = HostPolicy.for_bind("::1", 9000)
    assert six.host_ok(b"[::1]:9000") and six.host_ok(b"[0:0:0:0:0:0:0:1]:9000") and six.host_ok(b"localhost:9000")
    assert not six.host_ok(b"[::2]:9000") and not six.host_ok(b"evil.example:9000")


def test_allowed_hosts_at_any_port_or_one_and_every_address_for_a_wildcard_bind() -> None:
    p = HostPolicy.for_bind("127.0.0.1", 8765, ["Chronokg.Lab.Example", "proxy.example:443", "localhost:9000"])
    assert p.host_ok(b"chronokg.lab.example") and p.host_ok(b"chronokg.lab.example:8000")
    assert p.host_ok(b"proxy.example:443") and not p.host_ok(b"proxy.example:444")
    assert p.host_ok(b"localhost:9000")  # an ssh tunnel's port
    with pytest.raises(ValueError, match="not a host name"):
        HostPolicy.for_bind("127.0.0.1", 8765, ["http://x/y"])
    wild = HostPolicy.for_bind("0.0.0.0", 8765)
    assert wild.host_ok(b"192.168.1.5:8765") and wild.host_ok(b"[fe80::1]:8765")
    assert not wild.host_ok(b"server.lab.example:8765")  # a name: only with --allowed-host


def test_origin_is_this_servers_pages_or_none() -> None:
    p = HostPolicy.for_bind("127.0.0.1", 8765, ["proxy.example"])
    assert p.origin_ok(None)  # not sent by a page of another origin (curl, an agent, a same-origin GET)
    for good in (b"http://127.0.0.1:8765", b"http://localhost:8765", b"http://[::1]:8765", b"https://proxy.example"):
        assert p.origin_ok(good), good
    for bad in (b"http://evil.example:8765", b"null", b"http://127.0.0.1:8766", b"file://", b"http://localhost",
                b"chrome-extension://abc", b"http://127.0.0.1:8765/path"):
        assert not p.origin_ok(bad), bad


# --- a real server --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(served: tuple[Path, str]) -> Iterator[str]:
    with serve(served[0], "http", "--workers", "1", "--allowed-host", "chronokg.lab.example",
               "--allowed-host", "tunnel.example:1") as url:
        yield url


def _raw(url: str, request: bytes) -> bytes:
    """`request` sent as it is (a Host header, or none, that no HTTP client library would send)."""
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_host_the_server_does_not_own_is_421_on_every_route(server: str) -> None:
    port = urlsplit(server).port
    with httpx.Client(base_url=server, timeout=60) as http:
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "chronokg.lab.example", "chronokg.lab.example:80",
                     "tunnel.example:1"):
            answer = http.post("/tools/timeline", json=CHEAP, headers={"host": host})
            assert answer.status_code == 200 and answer.json()["rows"], host
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", "tunnel.example:2",
                     f"[::1]:{port + 1}"):
            for method, path in (("POST", "/tools/cypher"), ("GET", "/explore/api/trajectory-list"), ("GET", "/"),
                                 ("GET", "/health"), ("GET", "/tools"), ("GET", "/openapi.json")):
                answer = http.request(method, path, headers={"host": host},
                                      json={"query": "MATCH (n) RETURN n.id LIMIT 5"} if method == "POST" else None)
                assert answer.status_code == 421, (host, path, answer.text)
                error = answer.json()["error"]
                assert error["type"] == "misdirected" and "--allowed-host" in error["message"]
                assert "rows" not in answer.text and "un-secretary" not in answer.text
    missing = _raw(server, b"GET /tools HTTP/1.0\r\n\r\n")  # HTTP/1.0 may leave Host out
    assert missing.startswith(b"HTTP/1.1 421") and b"misdirected" in missing
    named = _raw(server, f"GET /tools HTTP/1.0\r\nHost: localhost:{port}\r\n\r\n".encode())
    assert named.startswith(b"HTTP/1.1 200")


def test_a_page_of_another_origin_is_403_on_the_data_routes(server: str) -> None:
    port = urlsplit(server).port
    with httpx.Client(base_url=server, timeout=60) as http:
        for origin in (f"http://evil.example:{port}", "null", f"http://127.0.0.1:{port + 1}"):
            for method, path in (("POST", "/tools/cypher"), ("GET", "/explore/api/trajectory-list")):
                answer = http.request(method, path, headers={"origin": origin},
                                      json={"query": "RETURN 1 AS x"} if method == "POST" else None)
                assert answer.status_code == 403 and answer.json()["error"]["type"] == "cross_origin", origin
                assert "rows" not in answer.text
        for origin in (server, f"http://localhost:{port}", "http://chronokg.lab.example"):
            answer = http.post("/tools/cypher", json={"query": "RETURN 1 AS x"}, headers={"origin": origin})
            assert answer.status_code == 200 and answer.json()["rows"] == [{"x": 1}], origin


def test_every_answer_carries_the_security_headers(server: str) -> None:
    port = urlsplit(server).port
    with httpx.Client(base_url=server, timeout=60) as http:
        answers = [http.get("/"), http.get("/health"), http.get("/docs"), http.get("/openapi.json"),
                   http.get("/nope"), http.post("/tools/timeline", json=CHEAP), http.post("/tools/nope", json={}),
                   http.get("/explore/api/trajectory-list"), http.get("/tools", headers={"host": f"evil:{port}"}),
                   http.post("/tools/cypher", json={"query": "RETURN 1"}, headers={"origin": "null"})]
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 404, 200, 404, 200, 421, 403]
    for a in answers:
        csp = a.headers["content-security-policy"]
        assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp and "frame-ancestors 'none'" in csp
        assert a.headers["x-content-type-options"] == "nosniff" and a.headers["referrer-policy"] == "no-referrer"
        assert a.headers["x-frame-options"] == "DENY"
    page, docs = answers[0], answers[2]
    assert "script-src 'sha256-" in page.headers["content-security-policy"]
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    assert "script-src 'sha256-" in docs.headers["content-security-policy"]
    assert answers[1].headers["content-security-policy"].startswith("default-src 'none'")


def test_an_ipv6_loopback_server_answers_to_its_own_names(served: tuple[Path, str]) -> None:
    with serve(served[0], "http", "--workers", "1", "--host", "::1") as url, \
            httpx.Client(base_url=url, timeout=60) as http:
        port = urlsplit(url).port
        assert url.startswith("http://[::1]:")
        assert http.post("/tools/timeline", json=CHEAP).status_code == 200  # Host: [::1]:PORT
        assert http.get("/health", headers={"host": f"localhost:{port}"}).status_code == 200
        assert http.get("/health", headers={"host": f"evil.example:{port}"}).status_code == 421
        answer = http.get("/explore/api/trajectory-list", headers={"origin": f"http://evil.example:{port}"})
        assert answer.status_code == 403


# --- DNS rebinding in Chromium -----------------------------------------------------------------------------------

# the names resolve to the server; the browser's private-network checks (Chromium's alone; other browsers have none)
# are off, so the test shows what the server refuses, not what this browser happens to block
REBINDING = ["--host-resolver-rules=MAP evil.example 127.0.0.1, MAP chronokg.lab.example 127.0.0.1",
             "--disable-features=BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,"
             "PrivateNetworkAccessRespectPreflightResults,LocalNetworkAccessChecks"]
ATTACK = """<!doctype html><title>evil</title><script>
(async () => {
  const out = {};
  for (const [name, path, init] of [
      ["cypher", "/tools/cypher", {method: "POST", headers: {"content-type": "application/json"},
                                   body: JSON.stringify({query: "MATCH (n) RETURN n.id AS id LIMIT 5"})}],
      ["explore", "/explore/api/trajectory-list", {}],
      ["timeline", "/tools/timeline", {method: "POST", headers: {"content-type": "application/json"},
                                       body: JSON.stringify({subject: "un-secretary-general"})}]]) {
    try { const r = await fetch(path, init); out[name] = [r.status, await r.text()]; }
    catch (e) { out[name] = [0, String(e)]; }
  }
  window.stolen = out;
})();
</script>"""


def test_a_page_at_another_name_resolving_to_loopback_cannot_read(server: str) -> None:
    from tests.report_helpers import ARGS, CHROMIUM
    from tests.test_explorer import wait_js

    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium")
    from playwright.sync_api import Route, sync_playwright

    port = urlsplit(server).port
    results: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[*ARGS, *REBINDING])
        try:
            page = browser.new_page()
            # the name resolves to the server: asked for its page, the server itself refuses the name
            first = page.goto(f"http://evil.example:{port}/")
            assert first is not None and first.status == 421 and "misdirected" in page.content()
            # after the rebinding, the attacker's page (served, in a real attack, by the name's first address) is
            # an origin of its own, http://evil.example:PORT, whose requests reach the loopback server
            for origin in (f"http://evil.example:{port}", f"http://chronokg.lab.example:{port}", server):
                def attacker(route: Route) -> None:
                    route.fulfill(status=200, content_type="text/html", body=ATTACK)

                page.route(f"{origin}/attack", attacker)
                page.goto(f"{origin}/attack")
                results[origin] = wait_js(page, "window.stolen")
                page.unroute(f"{origin}/attack")
        finally:
            browser.close()
    evil = results[f"http://evil.example:{port}"]
    for name in ("cypher", "explore", "timeline"):
        status, body = evil[name]
        assert status == 421 and "misdirected" in body and "un-secretary" not in body, (name, evil[name])
    # the same script reads from the server's own origin and from a name it was given (--allowed-host), which
    # resolves the same way: this browser would have let the attack through had the server answered the name
    for origin in (server, f"http://chronokg.lab.example:{port}"):
        assert [results[origin][n][0] for n in ("cypher", "explore", "timeline")] == [200, 200, 200], origin
        assert json.loads(results[origin]["timeline"][1])["rows"]


# --- MCP over streamable HTTP: the same names, by the same gate -------------------------------------------------

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def test_mcp_over_http_answers_to_the_same_names_as_the_http_server(served: tuple[Path, str]) -> None:
    """`serve mcp --transport http` takes `--allowed-host` and refuses another port's Host or Origin, as
    `serve http` does: the gate's one policy, with its 421 and 403 bodies."""
    with serve(served[0], "mcp", "--transport", "http", "--workers", "1", "--allowed-host", "chronokg.lab.example",
               "--allowed-host", "tunnel.example:1") as url, httpx.Client(base_url=url, timeout=60) as http:
        port = urlsplit(url).port
        assert port is not None
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", "chronokg.lab.example", "tunnel.example:1"):
            answer = http.post("/mcp", json=INIT, headers={**MCP_HEADERS, "host": host})
            assert answer.status_code == 200 and "serverInfo" in answer.text, (host, answer.text)
        for host in (f"127.0.0.1:{port + 1}", f"localhost:{port + 1}", f"[::1]:{port + 1}", f"evil.example:{port}",
                     "tunnel.example:2"):
            answer = http.post("/mcp", json=INIT, headers={**MCP_HEADERS, "host": host})
            assert answer.status_code == 421, (host, answer.text)
            assert answer.json()["error"]["type"] == "misdirected" and "--allowed-host" in answer.text
        for origin in (f"http://127.0.0.1:{port + 1}", f"http://localhost:{port + 1}", "null",
                       f"http://evil.example:{port}"):
            answer = http.post("/mcp", json=INIT, headers={**MCP_HEADERS, "origin": origin})
            assert answer.status_code == 403 and answer.json()["error"]["type"] == "cross_origin", origin
        answer = http.post("/mcp", json=INIT, headers={**MCP_HEADERS, "origin": "http://chronokg.lab.example"})
        assert answer.status_code == 200

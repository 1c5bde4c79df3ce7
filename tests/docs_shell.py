"""What the docs' bash blocks call where a reader's machine differs from the test's (tests/test_docs_run.py).

Run as `python -m tests.docs_shell COMMAND ...` from the shell functions the runner defines:

- `serve ARGS...`: `chronokg serve ARGS` started, probed, stopped. A reader leaves it running; the test starts
  it on a free loopback port (`--port` added or replaced), waits for it, asks `/health` (HTTP, with a bearer
  token when `CHRONOKG_SERVE_TOKENS` is set) or `initialize` + `tools/list` (MCP over stdio and streamable
  HTTP), and stops it. Exit 1 with the server's output when it does not come up or answers wrongly.
- `background ARGS...`: `chronokg serve ARGS` started on a free port and left running (the runner stops the
  block's process group after the block); prints the URL (`mcp+http://.../mcp` for MCP).
- `installed SPEC...`: `pip install SPEC...` as a check: every requirement of SPEC (a package with a version, or
  chronokg's extras) is installed already. A reader installs; the test environment has them.
- `pick PATTERN`: the id a reader copies from a listing, `…` standing for the part they read there: the one
  node id in the store (`$CHRONOKG_STORE`) that matches; of several snapshots, the newest (most releases).
- `port`: a free loopback port.
- `wait-port PORT`: wait until something listens there (30 s).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            return False
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.1)
    return False


def with_port(args: list[str], port: int) -> list[str]:
    out, i = [], 0
    while i < len(args):
        if args[i] == "--port":
            i += 2
            continue
        out.append(args[i])
        i += 1
    return [*out, "--port", str(port)]


def chronokg() -> list[str]:
    return [sys.executable, "-m", "chronokg.cli"]


def token() -> str | None:
    tokens = os.environ.get("CHRONOKG_SERVE_TOKENS", "")
    return tokens.split(",")[0].strip() or None


def get_json(url: str, body: dict[str, object] | None = None) -> object:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if token():
        headers["Authorization"] = f"Bearer {token()}"
    data = None if body is None else json.dumps(body).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=30) as r:
        text = r.read().decode()
        session = r.headers.get("mcp-session-id")
    if text.startswith("event:") or text.startswith("data:"):  # one SSE event (streamable HTTP)
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    out = json.loads(text)
    if session and isinstance(out, dict):
        out["_session"] = session
    return out


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "docs-test", "version": "1"}}}


def probe_stdio(args: list[str]) -> None:
    """MCP over stdio: initialize, tools/list, then close stdin (the server exits)."""
    proc = subprocess.Popen([*chronokg(), "serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    messages = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    out, err = proc.communicate("".join(json.dumps(m) + "\n" for m in messages), timeout=120)
    replies = {r.get("id"): r for r in map(json.loads, filter(None, out.splitlines()))}
    tools = replies.get(2, {}).get("result", {}).get("tools", [])
    if proc.returncode != 0 or not tools:
        sys.exit(f"chronokg serve {' '.join(args)} (stdio): exit {proc.returncode}, {len(tools)} tools\n{out}\n{err}")
    print(f"serve {' '.join(args)}: {len(tools)} tools over stdio")


def probe_http(args: list[str], proc: subprocess.Popen[bytes], port: int) -> str:
    base = f"http://127.0.0.1:{port}"
    if "mcp" in args[:1]:
        reply = get_json(f"{base}/mcp", INITIALIZE)
        assert isinstance(reply, dict) and "result" in reply, reply
        return f"MCP at {base}/mcp: {reply['result']['serverInfo']['name']}"
    health = get_json(f"{base}/health")
    assert isinstance(health, dict) and health.get("status") == "ok", health
    return f"{base}/health: ok"


def start(args: list[str], log: Path | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - the child holds it
    proc = subprocess.Popen([*chronokg(), "serve", *with_port(args, port)], stdout=out, stderr=out)
    if not wait_port(port, proc):
        proc.kill()
        sys.exit(f"chronokg serve {' '.join(args)}: did not listen on port {port} (exit {proc.poll()})"
                 + (f"\n{log.read_text(errors='replace')[-3000:]}" if log else ""))
    return proc, port


def serve(args: list[str]) -> None:
    if args[:1] == ["mcp"] and "http" not in args:
        probe_stdio(args)
        return
    log = Path(os.environ.get("DOCS_SERVE_LOG", "serve.log"))
    proc, port = start(args, log)
    try:
        print(f"serve {' '.join(args)}: {probe_http(args, proc, port)}")
    except Exception as exc:  # the server's own output says why
        sys.exit(f"chronokg serve {' '.join(args)}: {exc!r}\n{log.read_text(errors='replace')[-3000:]}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def background(args: list[str]) -> None:
    log = Path(os.environ.get("DOCS_SERVE_LOG", "serve.log"))
    _, port = start(args, log)
    print(f"mcp+http://127.0.0.1:{port}/mcp" if args[:1] == ["mcp"] else f"http://127.0.0.1:{port}")


def installed(specs: list[str]) -> None:
    """`pip install SPEC...` as a check that SPEC is already satisfied (`-q`, `-e` ignored)."""
    from packaging.utils import canonicalize_name

    pyproject = (REPO / "pyproject.toml").read_text()
    missing = []
    for spec in (s for s in specs if s not in {"install", "-q", "-e"}):
        m = re.fullmatch(r"(?:chronokg|\.)\[([\w,]+)\]", spec)
        reqs = [Requirement(spec)] if m is None else [
            Requirement(r) for extra in m.group(1).split(",")
            for r in re.findall(r'"([^"]+)"', re.search(rf"^{extra} = \[(.*?)\]", pyproject, re.M | re.S).group(1))]
        for req in reqs:
            try:
                version = metadata.version(canonicalize_name(req.name))
            except metadata.PackageNotFoundError:
                missing.append(str(req))
                continue
            if not req.specifier.contains(version, prereleases=True):
                missing.append(f"{req} (have {version})")
    if missing:
        sys.exit(f"pip install {' '.join(specs)}: not installed here: {', '.join(missing)}")


def pick(pattern: str) -> None:
    from chronokg.cli.common import opened

    prefix, _, suffix = pattern.partition("…")
    with opened(read_only=True, must_exist=True) as store:
        rows = store.run("MATCH (n) WHERE n.id STARTS WITH $p AND n.id ENDS WITH $s "
                         "RETURN n.id AS id, coalesce(n.source_count, 0) AS k ORDER BY k DESC, id",
                         {"p": prefix, "s": suffix})
    ids = [str(r["id"]) for r in rows]
    if not ids or (len(ids) > 1 and not prefix.startswith("snap-")):
        sys.exit(f"pick {pattern}: {len(ids)} ids match ({', '.join(ids[:5])})")
    print(ids[0])


def main() -> None:
    command, args = sys.argv[1], sys.argv[2:]
    if command == "serve":
        serve(args)
    elif command == "background":
        background(args)
    elif command == "installed":
        installed(args)
    elif command == "pick":
        pick(args[0])
    elif command == "port":
        print(free_port())
    elif command == "wait-port":
        sys.exit(0 if wait_port(int(args[0]), timeout=30) else f"nothing listens on port {args[0]}")
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()

"""The openai-compat client against servers that answer badly: an HTML error page, a refusal that echoes the
key, a redirect. Each failure is one line without the key; a redirect is followed, as the openai SDK did."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from chronokg.models import ModelRequest, get_model
from chronokg.models.client_errors import ModelConfigError, ModelRequestError, RetriesExhausted

KEY = "sk-test-0123456789abcdef"
PAGE = b"<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<h1>502 Bad Gateway</h1>\n</body>\n</html>\n"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes, **headers: str) -> None:
        self.send_response(status)
        for name, value in {"content-length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path.startswith("/page/"):
            self._answer(502, PAGE, **{"content-type": "text/html"})
        elif self.path.startswith("/echo/"):
            said = f"Incorrect API key provided: {self.headers.get('authorization')}"
            self._answer(401, json.dumps({"error": {"message": said}}).encode())
        elif self.path.startswith("/moved/"):
            self._answer(307, b"", location="/ok/v1/chat/completions")
        else:
            body = {"id": "r1", "model": "m", "choices": [{"index": 0, "message": {"content": "answered"},
                                                            "finish_reason": "stop"}]}
            self._answer(200, json.dumps(body).encode())


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _ask(base_url: str) -> str:
    async def go() -> str:
        model = get_model("openai-compat/m", base_url=base_url, api_key=KEY, cache=False, max_retries=0)
        try:
            done = await model.generate(ModelRequest(messages=[{"role": "user", "content": "x"}]))
            return done.choices[0].text
        finally:
            await model.aclose()
    return asyncio.run(go())


def test_an_html_error_page_is_one_line(url: str) -> None:
    with pytest.raises(RetriesExhausted) as info:
        _ask(f"{url}/page/v1")
    assert "\n" not in str(info.value) and "HTTP 502: <html> <head><title>502 Bad Gateway" in str(info.value)


def test_a_refusal_that_echoes_the_key_does_not_repeat_it(url: str) -> None:
    with pytest.raises(ModelRequestError) as info:
        _ask(f"{url}/echo/v1")
    assert KEY not in str(info.value) and "Incorrect API key provided: Bearer ***" in str(info.value)
    assert "the server refused the API key" in str(info.value)


def test_a_redirect_is_followed(url: str) -> None:
    assert _ask(f"{url}/moved/v1") == "answered"


@pytest.mark.parametrize(("given", "said"), [("http://host:abc/v1", "is not a URL"), ("http://[::1", "is not a URL"),
                                              ("localhost:8000/v1", "is not an http(s) URL")])
def test_a_base_url_no_request_can_go_to_is_refused_at_once(given: str, said: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Not retried for minutes as a failed connection: one line naming where the URL came from."""
    with pytest.raises(ModelConfigError, match=rf"^base URL '.*' {re.escape(said)}"):
        get_model("openai-compat/m", base_url=given, api_key=KEY, cache=False)
    monkeypatch.setenv("CHRONOKG_OPENAI_BASE_URL", given)
    setting = r"^CHRONOKG_OPENAI_BASE_URL \(or OPENAI_BASE_URL\)"
    with pytest.raises(ModelConfigError, match=rf"{setting} '.*' {re.escape(said)}"):
        get_model("openai/m", api_key=KEY, cache=False)

"""The errors model clients raise; all are `chronokg.errors.ModelError`, so the CLI shows one red line."""

from __future__ import annotations

import re

from chronokg.errors import ModelError

# What servers and proxies say when the key is missing or wrong. LiteLLM's proxy without a database answers a key
# it cannot check with 400 "No connected db."; others say "Authentication Error", "Invalid API key", ...
_KEY_REFUSED = re.compile(
    r"no connected db|authenticat|unauthori[sz]ed|api[ _-]?key|invalid[ _-]?(?:proxy[ _-]server[ _-])?token"
    r"|bearer token|missing (?:the )?(?:authorization|credentials)|invalid credentials|x-api-key",
    re.IGNORECASE)


def key_refused(status: int | None, message: str) -> bool:
    """Whether a refusal is about the API key: any 401, or a 400/403 whose body says the key is missing or wrong
    (a 403 about a model or a quota, or a 400 about the request, is not)."""
    if status == 401:
        return True
    return status in (400, 403) and _KEY_REFUSED.search(message) is not None


class ModelConfigError(ModelError):
    """The spec, options, installed packages or keys cannot make a client; the message says what to fix."""


class ModelRequestError(ModelError):
    """The server refused the request in a way a retry cannot fix (400, 401, 403, 404, 422, ...)."""

    def __init__(self, spec: str, status: int | None, message: str) -> None:
        self.spec = spec
        self.status = status
        self.server_message = message
        code = f"HTTP {status}" if status is not None else "refused"
        super().__init__(f"{spec}: {code}: {message}")


class TransientModelError(ModelError):
    """A failure worth retrying: 429, 5xx, a timeout, a dropped connection or a garbled body.

    `retry_after` is the delay the server asked for (seconds), if it asked.
    """

    def __init__(self, reason: str, *, status: int | None = None, retry_after: float | None = None) -> None:
        self.reason = reason
        self.status = status
        self.retry_after = retry_after
        super().__init__(reason)


class RetriesExhausted(ModelError):
    """Every attempt failed with a transient error; `attempts` counts them all."""

    def __init__(self, spec: str, attempts: int, last: TransientModelError) -> None:
        self.spec = spec
        self.attempts = attempts
        self.last = last
        super().__init__(f"{spec}: gave up after {attempts} attempts; last error: {last.reason}")


class ModelTimeout(ModelError):
    """The run's time budget (`run_timeout_s`) ran out before the request finished."""

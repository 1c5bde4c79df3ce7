"""A run is a folder: `run.json` (what was run) and `samples.jsonl` (one line per sample, append-only).

Every sample is written and flushed as soon as it is scored, so a process killed at any moment (kill -9)
loses at most the requests in flight. On reopening, a torn last line is cut off, and the samples that
succeeded are skipped; failed ones are tried again (a later line for the same unit supersedes an earlier
one, so nothing is ever counted twice).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, Field, ValidationError

from chronokg.errors import InputError

Unit = tuple[str, str, int]  # (question id, model spec, sample index)
# How a re-scored sample's `error` starts when its answer key gives no answer now: no metric counts it, and it is
# no failure of the model.
NOT_SCORABLE = "not scorable"


class SampleRecord(BaseModel):
    """One (question, model, sample): what was sent (its hash), what came back, and how it scored."""

    question_id: str
    model: str
    sample: int = 0
    family: str = ""
    variant: str = ""
    request_hash: str | None = None
    output: str | None = None
    steps: list[dict[str, Any]] = Field(default_factory=list, description="Intermediate calls (stage-wise, "
                                                                           "judge, tool calls)")
    answer: str | None = None
    correct: bool | None = None
    score: float | None = None
    fields: dict[str, Any] = Field(default_factory=dict, description="What the metrics group by")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    cached: bool = False
    error: str | None = None
    at: str = Field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))

    @property
    def unit(self) -> Unit:
        return (self.question_id, self.model, self.sample)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def not_scorable(self) -> bool:
        """A re-scored sample whose answer key gives no answer now (`eval rescore`): not a model failure."""
        return self.error is not None and self.error.startswith(NOT_SCORABLE)


def left_out(records: Iterable[SampleRecord]) -> tuple[int, int]:
    """(failed requests, samples not scorable now) among `records`: what no metric counts, by why."""
    failed = not_scorable = 0
    for r in records:
        if r.not_scorable:
            not_scorable += 1
        elif not r.ok:
            failed += 1
    return failed, not_scorable


class RunInfo(BaseModel):
    """`run.json`: the models and their settings, the question files and their hashes, the store snapshot."""

    run_id: str
    models: list[dict[str, Any]] = Field(description="Each model as given (spec, base_url, api_key_env) and "
                                                     "`resolved`: its alias resolved (never the key)")
    judge: dict[str, Any] | None = Field(default=None, description="The judge, resolved (never the key)")
    questions: list[dict[str, str]] = Field(description="Question files with their sha256")
    protocol: str
    samples: int
    options: dict[str, Any] = Field(default_factory=dict)
    snapshot: str | None = None
    store: str | None = None
    chronokg: str = ""
    started: str = ""
    finished: str | None = None
    status: str = "running"
    totals: dict[str, Any] = Field(default_factory=dict)
    cutoffs: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Each model's knowledge cutoff "
                                               "(`chronokg.eval.cutoff.Cutoff`: date, estimated, source)")
    rescored_from: str | None = Field(default=None, description="The run whose answers this one re-scored "
                                                                "(`eval rescore`)")
    known_at: str | None = Field(default=None, description="Re-scored as the releases known on this day said it")
    flips: dict[str, int] | None = Field(default=None, description="A re-scored run's flipped verdicts, counted by "
                                                                  "kind (e.g. now wrong, now right, not scorable)")


def repair(path: Path) -> int:
    """Cut a torn last line (a write a kill interrupted); returns the bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with path.open("rb+") as fh:
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return 0
        # Find the last newline; everything after it is a partial record.
        block = 1 << 16
        pos = size
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                cut = start + idx + 1
                fh.truncate(cut)
                return size - cut
            pos = start
        fh.truncate(0)
        return size


def read_samples(path: Path) -> Iterator[SampleRecord]:
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield SampleRecord.model_validate_json(line)
            except ValueError as exc:
                raise InputError(path, f"line {n}", f"not a sample record: {exc}") from None


def latest(path: Path) -> dict[Unit, SampleRecord]:
    """The last record of every unit (a retried sample supersedes its failed attempt)."""
    return {r.unit: r for r in read_samples(path)}


class SampleLog:
    """Append-only writer of `samples.jsonl`: one line per record, flushed to the OS at once."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        repair(path)
        self.path = path
        self._fh: IO[str] = path.open("a", encoding="utf-8")

    def write(self, record: SampleRecord) -> None:
        self._fh.write(record.model_dump_json() + "\n")
        self._fh.flush()

    def sync(self) -> None:
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.sync()
            self._fh.close()


def write_info(folder: Path, info: RunInfo) -> None:
    tmp = folder / "run.json.part"
    tmp.write_text(json.dumps(info.model_dump(mode="json"), indent=2, ensure_ascii=False), encoding="utf-8")
    tmp.replace(folder / "run.json")


def read_info(folder: Path) -> RunInfo:
    path = folder / "run.json"
    if not path.exists():
        raise InputError(folder, None, "not a run folder (no run.json)")
    try:
        return RunInfo.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError as exc:  # one line: the first problem and where it is, not pydantic's dump
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "the file"
        raise InputError(path, None, f"not a run description ({where}: {first['msg']})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(path, None, f"not a run description: {str(exc).splitlines()[0]}") from None

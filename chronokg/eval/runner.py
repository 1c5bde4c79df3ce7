"""The evaluation runner: questions x models x samples, concurrently, logged one sample at a time, resumable.

    chronokg eval run tempomed.jsonl --model openai-compat/llama --base-url http://gpu:8000 --log-dir runs

Re-running the same command (or `--resume RUN_DIR`) continues a run: samples that succeeded are skipped,
failed ones are tried again, a torn last line is dropped, and nothing is ever counted twice. Answers a
response cache already holds cost nothing, so a run killed at any moment loses almost no work.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

import chronokg
from chronokg.bench.question import Question, read_jsonl
from chronokg.errors import ChronoKGError, InputError
from chronokg.eval import cutoff
from chronokg.eval.arms import AgentMode, Arms, RagMode
from chronokg.eval.judge import open_judge, reset_judge, set_judge
from chronokg.eval.log import RunInfo, SampleLog, SampleRecord, Unit, latest, read_info, write_info
from chronokg.eval.profile import Outcome, Profile, profile_for
from chronokg.models import ModelClient, RetriesExhausted, get_model


class ModelEntry(BaseModel):
    """A model of a run: its spec and where it is served (the rest comes from the models file / settings)."""

    spec: str
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, description="The variable holding its API key (the name is "
                                                               "recorded, never the key; a resume reads it again)")


PROTOCOLS = ("seed", "chronokg")

# `eval run` exits with this code when the run ended `incomplete` (some samples failed; --resume retries them).
EXIT_INCOMPLETE = 3


class RunOptions(BaseModel):
    protocol: Literal["seed", "chronokg"] = Field(default="seed", description="seed (the benchmarks' published "
                                                                              "settings) or chronokg")
    samples: int = Field(default=1, ge=1, description="Samples per question (a family may fix its own)")
    concurrency: int = Field(default=32, ge=1, description="Samples in flight at once, all models together")
    limit: int | None = Field(default=None, ge=1, description="Only the first N questions of each file")
    cache: bool = Field(default=True, description="Use the response cache (a resumed run gets cached answers)")
    judge: str | None = Field(default=None, description="Judge model for families scored by an LLM judge "
                                                        "(BenchAge); none: their non-LLM scoring")
    judge_base_url: str | None = Field(default=None, description="Base URL of an openai-compat judge")
    judge_api_key_env: str | None = Field(default=None, description="The variable holding the judge's API key")
    family_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Per-family evaluation options, passed to the family's profile "
                                          "(e.g. {'micxr': {'stagewise': true}})")
    rag: RagMode | None = Field(default=None, description="Add retrieved passages to each question: valid on its "
                                                          "target date (time-aware) or by similarity alone "
                                                          "(atemporal, the ConflictMedQA protocol)")
    rag_k: int = Field(default=2, ge=1, le=50, description="Passages per question under --rag")
    rag_index: str | None = Field(default=None, description="The passage index folder (default: beside the store)")
    agent: AgentMode | None = Field(default=None, description="tools: the model may call chronokg's tools "
                                                              "in a bounded loop before it answers")
    tools_url: str | None = Field(default=None, description="Where the agent's tools are: None (in process over "
                                                            "the run's store), http(s)://… or mcp+http(s)://…")
    agent_max_steps: int = Field(default=8, ge=1, le=64, description="Model calls per sample under --agent")
    agent_tool_budget: int = Field(default=12, ge=0, le=256, description="Tool calls per sample under --agent")
    write: bool = Field(default=True, description="Write the predictions into the graph (a resumed run keeps it)")
    cutoffs: dict[str, str] = Field(default_factory=dict, description="Declared knowledge cutoffs, {model spec: "
                                                                      "ISO date} (`--cutoff MODEL=DATE`)")

    def profile(self, family: str) -> Profile:
        """The family's profile under these options."""
        return profile_for(family, self.family_options.get(family))


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def run_id(models: Sequence[ModelEntry], files: Sequence[dict[str, str]], options: RunOptions,
           snapshot: str | None = None, file_cutoffs: dict[str, str] | None = None) -> str:
    """The same models, question files, options and store snapshot give the same run, wherever and whenever it
    is started (so re-running resumes it, and the same config in another log folder is the same run); never
    when or where it ran. A newer store (the baselines, RAG and tools read it) is a new run."""
    # which variable holds a model's key is not what was run: it stays out of the id
    what: dict[str, Any] = {"models": [m.model_dump(exclude={"api_key_env"}) for m in models],
                             "questions": [f["sha256"] for f in files],
                             "protocol": options.protocol, "samples": options.samples, "limit": options.limit}
    if snapshot:
        what["snapshot"] = snapshot
    if options.judge:
        what["judge"] = options.judge
    if options.family_options:  # only when given, so runs without them keep their ids
        what["family_options"] = options.family_options
    if options.rag:
        what["rag"] = [options.rag, options.rag_k, options.rag_index]
    if options.agent:
        what["agent"] = [options.agent, options.tools_url, options.agent_max_steps, options.agent_tool_budget]
    # a declared cutoff (--cutoff, else the models file's) is part of what the run claims about its models
    cutoffs = {**(file_cutoffs or {}), **options.cutoffs}
    if cutoffs:
        what["cutoffs"] = cutoffs
    key = json.dumps(what, sort_keys=True)
    return "run-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def load_questions(files: Sequence[Path], limit: int | None) -> list[Question]:
    """The questions of `files`, each of a known family and each id once (else one error naming the record)."""
    from chronokg.bench.family import FAMILIES

    out: list[Question] = []
    seen: dict[str, tuple[Path, int]] = {}
    for path in files:
        if path.is_dir():
            raise InputError(path, None, "is a folder; give question files (canonical JSONL)")
        for taken, q in enumerate(read_jsonl(path)):
            if limit is not None and taken >= limit:
                break
            if q.family not in FAMILIES:
                raise InputError(path, taken + 1, f"question {q.id}: unknown family {q.family!r} "
                                                  f"(known: {', '.join(FAMILIES.names())})")
            if q.id in seen:
                first, line = seen[q.id]
                raise InputError(path, taken + 1, f"question id {q.id} again (first in {first}, record {line}); "
                                                  "each question id may appear once in a run")
            seen[q.id] = (path, taken + 1)
            out.append(q)
    if not out:
        raise InputError(", ".join(map(str, files)), None, "no questions")
    return out


@dataclass
class Tally:
    """Running counts the progress display shows; after `run`, also the run's last record of every unit (what
    run.json's totals count), so a caller that summarises or writes the run need not read samples.jsonl again."""

    done: int = 0
    failed: int = 0
    correct: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    records: dict[Unit, SampleRecord] = field(default_factory=dict)

    def add(self, record: SampleRecord) -> None:
        self.done += 1
        error = record.error or record.fields.get("request_error")
        if error:
            self.failed += 1
            self.errors[str(error).split(":", 1)[0]] += 1
        elif record.correct:
            self.correct += 1
        self.prompt_tokens += record.prompt_tokens
        self.completion_tokens += record.completion_tokens


def _record(question: Question, spec: str, sample: int, outcome: Outcome | None, error: str | None) -> SampleRecord:
    if outcome is None:
        return SampleRecord(question_id=question.id, model=spec, sample=sample, family=question.family,
                            variant=question.variant, error=error)
    return SampleRecord(
        question_id=question.id, model=spec, sample=sample, family=question.family, variant=question.variant,
        request_hash=outcome.request_hash, output=outcome.output, steps=outcome.steps, answer=outcome.answer,
        correct=outcome.correct, score=outcome.score, fields=outcome.fields, prompt_tokens=outcome.prompt_tokens,
        completion_tokens=outcome.completion_tokens, latency_s=outcome.latency_s, retries=outcome.retries,
        cached=outcome.cached,
    )


def pending(questions: Sequence[Question], specs: Sequence[str], options: RunOptions,
            done: set[Unit]) -> list[tuple[Question, str, int]]:
    units = []
    profiles: dict[str, Profile] = {}
    for q in questions:
        profile = profiles.get(q.family) or profiles.setdefault(q.family, options.profile(q.family))
        n = profile.samples(q, options.protocol, options.samples)
        for spec in specs:
            for s in range(n):
                if (q.id, spec, s) not in done:
                    units.append((q, spec, s))
    return units


async def execute(log: SampleLog, units: Sequence[tuple[Question, str, int]], clients: dict[str, ModelClient],
                  options: RunOptions, on_record: Callable[[SampleRecord], None] | None = None,
                  arms: Arms | None = None) -> Tally:
    """Answer every unit with at most `options.concurrency` in flight; each record is logged as it completes."""
    tally = Tally()
    arms = arms or Arms()
    profiles = {family: options.profile(family) for family in {q.family for q, _, _ in units}}
    queue: asyncio.Queue[tuple[Question, str, int]] = asyncio.Queue()
    for unit in units:
        queue.put_nowait(unit)

    async def worker() -> None:
        while True:
            try:
                question, spec, sample = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            token, tool_steps = arms.begin()
            try:
                asked, given = arms.question(question)
                outcome = await profiles[question.family].answer(clients[spec], asked, options.protocol, sample)
                outcome.steps = [*given, *outcome.steps, *tool_steps]
                outcome.fields = {**outcome.fields, **profiles[question.family].context_fields(question, outcome.steps)}
                record = _record(question, spec, sample, outcome, None)
            except (ChronoKGError, OSError, TimeoutError, ValueError) as exc:
                error = f"{type(exc).__name__}: {exc}"
                counted = profiles[question.family].failed(question, options.protocol, error)
                record = _record(question, spec, sample, counted, None if counted is not None else error)
                if isinstance(exc, RetriesExhausted):  # the retries happened: record them, as for a success
                    record.retries = exc.attempts - 1
            finally:
                arms.end(token)
            log.write(record)
            tally.add(record)
            if on_record is not None:
                on_record(record)

    await asyncio.gather(*(worker() for _ in range(min(options.concurrency, max(1, len(units))))))
    return tally


def open_clients(models: Sequence[ModelEntry], options: RunOptions, questions: Sequence[Question],
                 store: Any = None) -> dict[str, ModelClient]:
    clients: dict[str, ModelClient] = {}
    for m in models:
        client = get_model(m.spec, base_url=m.base_url, api_key_env=m.api_key_env, cache=options.cache,
                           concurrency=options.concurrency)
        bind = getattr(client, "bind", None)
        if bind is not None:  # the reference baselines: they answer from the questions and the store
            bind(questions=questions, store=store, protocol=options.protocol)
        clients[m.spec] = client
    return clients


def options_of(info: RunInfo, folder: Path) -> RunOptions:
    """A recorded run's options (one error naming run.json if they are not valid options)."""
    try:
        return RunOptions.model_validate(info.options)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(folder / "run.json", None, f"options.{'.'.join(map(str, first['loc']))}: "
                                                    f"{first['msg']}") from None


def check_models(models: Sequence[ModelEntry], options: RunOptions, questions: Sequence[Question] | None = None,
                 store: Any = None) -> list[dict[str, Any]]:
    """Every model spec made into a client once (spec, provider, base URL, key; a baseline bound to the
    questions and the store when given), so a bad one fails before a run folder is made. Returns what
    run.json records of each: its alias resolved (`ClientOptions.described`, never the key)."""
    described = []
    for m in models:
        client = get_model(m.spec, base_url=m.base_url, api_key_env=m.api_key_env, cache=False,
                           concurrency=options.concurrency)
        bind = getattr(client, "bind", None)
        if bind is not None and questions is not None:
            bind(questions=questions, store=store, protocol=options.protocol)
        described.append(_described(client))
    return described


def _described(client: ModelClient) -> dict[str, Any]:
    from chronokg.models import ClientOptions

    options = getattr(client, "options", None)
    if isinstance(options, ClientOptions):
        return options.described()
    declared = getattr(client, "declared_cutoff", None)  # a baseline keeps only its alias's declared cutoff
    return {"spec": client.spec, **({"cutoff": declared.isoformat()} if declared is not None else {})}


def check_options(options: RunOptions, store_uri: str | None) -> None:
    """What would make the run fail at its start (a baseline as judge, no passage index, nowhere to run the
    tools), found before a run folder is made."""
    if options.judge:
        judge_described(options)  # raises, naming why (a baseline, no server, an unset key variable)
    if options.rag:
        from chronokg.eval.arms import rag_index_folder

        folder = rag_index_folder(options.rag_index, store_uri)
        if not (folder / "meta.json").exists():
            raise ChronoKGError(f"--rag: no passage index at {folder} (build it with 'chronokg index build', "
                                "or give --rag-index DIR)")
    if options.agent:
        from chronokg.eval.arms import check_tools_url

        check_tools_url(options.tools_url, store_uri)


def judge_described(options: RunOptions) -> dict[str, Any] | None:
    """The run's judge as run.json records it (resolved, never the key); None without one."""
    if not options.judge:
        return None
    if options.judge.startswith("baseline/"):
        open_judge(options.judge)  # raises, naming why
    return _described(get_model(options.judge, base_url=options.judge_base_url,
                                api_key_env=options.judge_api_key_env, cache=False))


def check_files(info: RunInfo) -> list[Path]:
    """A resumed run's question files, each still there with the content it had (else one clear error)."""
    paths = []
    for described in info.questions:
        path = Path(described["path"])
        if not path.is_file():
            raise ChronoKGError(f"run {info.run_id}: question file {path} is gone (resume from the directory the "
                                "run was started in, or restore the file)")
        if file_hash(path) != described["sha256"]:
            raise ChronoKGError(f"run {info.run_id}: question file {path} changed since the run started; a changed "
                                "file is a new run (start it without --resume)")
        paths.append(path)
    return paths


def open_arms(options: RunOptions, store: Any = None) -> Arms:
    """The run's retrieval arms (none: a no-op); fails before any request when one cannot work."""
    from chronokg.settings import Settings

    rag = None
    if options.rag:
        from chronokg.eval.arms import RagArm

        rag = RagArm.open(options.rag, options.rag_k, options.rag_index,
                          store.uri if store is not None else None)
    tools = None
    if options.agent:
        from chronokg.eval.arms import open_tools

        token = Settings().tools_token
        tools = open_tools(options.tools_url, store, token.get_secret_value() if token else None)
    return Arms(rag, tools, max_steps=options.agent_max_steps, tool_budget=options.agent_tool_budget)


async def _run_all(log: SampleLog, units: list[tuple[Question, str, int]], clients: dict[str, ModelClient],
                   options: RunOptions, on_record: Callable[[SampleRecord], None] | None,
                   arms: Arms | None = None) -> Tally:
    judge = None
    arms = arms or Arms()
    try:
        await arms.start()
        await asyncio.to_thread(arms.prepare, [q for q, _, _ in units])
        judge = open_judge(options.judge, options.judge_base_url, options.cache, options.concurrency,
                           options.judge_api_key_env)
        token = set_judge(judge)  # the profiles of this run's samples read it (`current_judge`)
        try:
            wrapped = {spec: arms.client(client) for spec, client in clients.items()}
            return await execute(log, units, wrapped, options, on_record, arms)
        finally:
            reset_judge(token)
    finally:
        for client in [*clients.values(), *([judge.client] if judge is not None else [])]:
            await client.aclose()
        await arms.aclose()


def prepare(folder_root: Path, files: Sequence[Path], models: Sequence[ModelEntry], options: RunOptions,
            snapshot: str | None = None, store_uri: str | None = None) -> tuple[Path, RunInfo]:
    """The run folder and its `run.json` (an existing folder of the same run is resumed, a different one refused)."""
    for family in options.family_options:  # bad family options fail before a folder is made
        options.profile(family)
    check_options(options, store_uri)
    twice = next((m.spec for i, m in enumerate(models) if m.spec in [o.spec for o in models[:i]]), None)
    if twice is not None:  # its samples would be asked and logged twice under one name
        raise ChronoKGError(f"--model {twice}: given twice (each model once per run)")
    unknown = sorted(set(options.cutoffs) - {m.spec for m in models})
    if unknown:
        raise ChronoKGError(f"--cutoff {unknown[0]}: not a model of the run (its models: "
                            f"{', '.join(m.spec for m in models)})")
    resolved = check_models(models, options)
    judge = judge_described(options)
    described = [{"path": str(p), "sha256": file_hash(p)} for p in files]
    file_cutoffs = {m.spec: str(r["cutoff"]) for m, r in zip(models, resolved, strict=True) if r.get("cutoff")}
    rid = run_id(models, described, options, snapshot, file_cutoffs)
    folder = folder_root / rid
    if (folder / "run.json").exists():
        info = read_info(folder)
        if [q["sha256"] for q in info.questions] != [d["sha256"] for d in described]:
            raise ChronoKGError(f"{folder} holds a run of other question files")
        info.status = "running"
        return folder, info
    folder.mkdir(parents=True, exist_ok=True)
    info = RunInfo(run_id=rid, models=[{**m.model_dump(), "resolved": r}
                                       for m, r in zip(models, resolved, strict=True)],
                   judge=judge, questions=described,
                   protocol=options.protocol, samples=options.samples, options=options.model_dump(),
                   snapshot=snapshot, store=store_uri, chronokg=chronokg.__version__,
                   started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    write_info(folder, info)
    return folder, info


def run(folder: Path, info: RunInfo, questions: Sequence[Question], store: Any = None,
        on_start: Callable[[int, int], None] | None = None,
        on_record: Callable[[SampleRecord], None] | None = None) -> tuple[RunInfo, Tally]:
    """Answer every pending unit of the run in `folder`; returns the updated run description and the tally."""
    options = RunOptions.model_validate(info.options)
    models = [ModelEntry.model_validate(m) for m in info.models]
    path = folder / "samples.jsonl"
    log = SampleLog(path)  # repairs a torn last line first
    try:
        done = {unit for unit, rec in latest(path).items() if rec.ok and not rec.fields.get("request_error")}
        units = pending(questions, [m.spec for m in models], options, done)
        if on_start is not None:
            on_start(len(units), len(done))
        arms = open_arms(options, store)
        clients = open_clients(models, options, questions, store)
        tally = asyncio.run(_run_all(log, units, clients, options, on_record, arms))
    finally:
        log.close()
    records = latest(path)
    ok = [r for r in records.values() if r.ok]
    counted = sum(1 for r in ok if r.fields.get("request_error"))  # failed requests the protocol scores
    info.totals = {
        "samples": len(ok), "failed": len(records) - len(ok) + counted, "correct": sum(1 for r in ok if r.correct),
        "prompt_tokens": sum(r.prompt_tokens for r in ok), "completion_tokens": sum(r.completion_tokens for r in ok),
    }
    info.status = "complete" if len(ok) == len(records) and not counted and len(records) >= len(units) + len(done) \
        else "incomplete"
    info.cutoffs = {spec: c.model_dump(mode="json")
                    for spec, c in cutoff.resolve(info.models, ok, options.cutoffs).items()}
    info.finished = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_info(folder, info)
    tally.records = records
    return info, tally

"""`chronokg eval run|metrics|export|score|report`: evaluation runs from the command line."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer

from chronokg.cli.common import console, err, guarded, opened
from chronokg.cli.lazy import RichHelpGroup
from chronokg.cli.render import json_text, say, table

eval_app = typer.Typer(help="Evaluate models on generated benchmarks: run, score, metrics, reports.",
                       no_args_is_help=True, cls=RichHelpGroup)


def register(app: typer.Typer) -> None:
    from chronokg.cli.eval_compare import register_compare
    from chronokg.cli.eval_outputs import register_outputs
    from chronokg.cli.eval_rescore import register_rescore
    from chronokg.cli.lifecycle import register_runs

    register_outputs(eval_app)
    register_runs(eval_app)
    register_compare(eval_app)
    register_rescore(eval_app)
    app.add_typer(eval_app, name="eval")


@eval_app.command("run")
def run_command(
    ctx: typer.Context,
    questions: Annotated[list[Path] | None, typer.Argument(help="Question files (canonical JSONL)")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Model spec (repeat for several): "
                                                    "openai/..., openai-compat/..., vllm/..., baseline/...")] = None,
    base_url: Annotated[str | None, typer.Option(help="Base URL of the OpenAI-compatible server of the "
                                                      "openai-compat models")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the models' API key "
                                                         "(its name goes in run.json, never the key)")] = None,
    log_dir: Annotated[Path, typer.Option(help="Where run folders go")] = Path("runs"),
    resume: Annotated[Path | None, typer.Option(help="Continue the run in this folder")] = None,
    protocol: Annotated[str, typer.Option(help="seed (published settings and extraction) or chronokg")] = "seed",
    samples: Annotated[int, typer.Option(min=1, help="Samples per question")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="Samples in flight at once")] = 32,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions of each file")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Use the model response cache")] = True,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Write the predictions into the graph")] = True,
    judge: Annotated[str | None, typer.Option(help="Judge model for the families an LLM judge scores (BenchAge: "
                                                   "the seed's judge prompt, temperature 0, max_tokens 1); "
                                                   "without it they use exact/alias match")] = None,
    judge_base_url: Annotated[str | None, typer.Option(help="Base URL of an openai-compat judge (default: "
                                                             "--base-url for an openai-compat/... judge)")] = None,
    judge_api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the judge's API key "
                                                               "(default: --api-key-env for an openai-compat/... "
                                                               "judge)")] = None,
    family_option: Annotated[list[str] | None, typer.Option(
        "--family-option", "-O", help="A family's evaluation option as FAMILY.KEY=VALUE (VALUE read as JSON, "
                                      "else text; repeat for several), e.g. micxr.stagewise=true")] = None,
    rag: Annotated[str | None, typer.Option(help="Retrieval arm: time-aware (passages valid on the question's "
                                                 "date) or atemporal (similarity alone, the ConflictMedQA "
                                                 "protocol); needs chronokg[rag] and 'chronokg index build'")] = None,
    k: Annotated[int, typer.Option("--k", min=1, max=50, help="Passages per question under --rag")] = 2,
    rag_index: Annotated[Path | None, typer.Option(help="Passage index folder [default: beside the store]")] = None,
    agent: Annotated[str | None, typer.Option(help="tools: the model may call chronokg's tools (queries, guarded "
                                                   "Cypher, search) in a bounded loop before it answers")] = None,
    tools: Annotated[str | None, typer.Option("--tools", help="The agent's tool server: http(s)://HOST:PORT "
                                                              "(serve http) or mcp+http(s)://HOST:PORT/mcp "
                                                              "[default: in process over the store; token from "
                                                              "$CHRONOKG_TOOLS_TOKEN]")] = None,
    max_steps: Annotated[int, typer.Option(min=1, max=64, help="Model calls per sample under --agent")] = 8,
    tool_budget: Annotated[int, typer.Option(min=0, max=256, help="Tool calls per sample under --agent")] = 12,
    cutoff: Annotated[list[str] | None, typer.Option(help="A model's knowledge cutoff as MODEL=DATE (repeat for "
                                                          "several; default: its models file entry, else "
                                                          "chronokg's estimate): pre/post-cutoff metrics")] = None,
) -> None:
    """Send the questions to the models, log every sample, score them, write predictions into the graph."""
    from chronokg.cli.progress import run_progress
    from chronokg.errors import ChronoKGError
    from chronokg.eval import runner
    from chronokg.eval.cutoff import parse_declared
    from chronokg.eval.log import read_info

    def body() -> None:
        given = {name: value for name, value in ctx.params.items()  # the flags given, not defaulted
                 if name != "resume" and getattr(ctx.get_parameter_source(name), "name", "DEFAULT") != "DEFAULT"}
        if resume is not None:
            info = read_info(resume)
            folder = resume
            files = runner.check_files(info)
            options = runner.options_of(info, resume)
            refuse_changes(info, options, given)
        else:
            if not questions or not model:
                raise ChronoKGError("give question files and at least one --model (or --resume RUN_DIR)")
            if protocol not in runner.PROTOCOLS:
                raise ChronoKGError(f"--protocol {protocol!r}: give {' or '.join(runner.PROTOCOLS)}")
            if rag not in (None, "time-aware", "atemporal"):
                raise ChronoKGError(f"--rag {rag!r}: give time-aware or atemporal")
            if agent not in (None, "tools"):
                raise ChronoKGError(f"--agent {agent!r}: the one agent arm is 'tools'")
            options = runner.RunOptions(protocol=protocol, samples=samples, concurrency=concurrency, limit=limit,
                                        cache=cache, judge=judge,
                                        family_options=parse_family_options(family_option or []),
                                        rag=rag, rag_k=k, rag_index=str(rag_index) if rag_index else None,
                                        agent=agent, tools_url=tools, agent_max_steps=max_steps,
                                        agent_tool_budget=tool_budget, write=write, cutoffs=parse_declared(cutoff),
                                        judge_base_url=judge_base_url or (
                                            base_url if (judge or "").startswith("openai-compat/") else None),
                                        judge_api_key_env=judge_api_key_env or (
                                            api_key_env if (judge or "").startswith("openai-compat/") else None))
            entries = [runner.ModelEntry(spec=m, base_url=None if m.startswith("baseline/") else base_url,
                                         api_key_env=None if m.startswith("baseline/") else api_key_env)
                       for m in model]
            files = list(questions)
        loaded = runner.load_questions(files, options.limit)
        store_cm = _maybe_store()
        with store_cm as store:
            if resume is None:
                from chronokg.bench import snapshot

                runner.check_models(entries, options, loaded, store)  # every spec, before a folder is made
                folder, info = runner.prepare(log_dir, files, entries, options,
                                              snapshot=snapshot.current(store) if store is not None else None,
                                              store_uri=store.uri if store is not None else None)
            with run_progress(console) as progress:
                info, tally = runner.run(folder, info, loaded, store, on_start=progress.begin,
                                         on_record=progress.record)
        say(console, "run ", (info.run_id, "bold"), f" in {folder}: {info.status}")
        records = list(tally.records.values())  # as run.json counted them: samples.jsonl is not read again
        _summary(records)
        if options.write:
            _write(folder, info, loaded, records)
        if info.status != "complete":
            say(err, ("note:", "yellow"), f" {info.totals.get('failed', 0):,} samples failed; '--resume {folder}' "
                f"tries them again (exit code {runner.EXIT_INCOMPLETE}: incomplete)")
            raise typer.Exit(runner.EXIT_INCOMPLETE)
    guarded(body)


# `eval run` flags -> where a run keeps them (RunOptions field, or a key of run.json); --concurrency is how fast,
# not what, so a resume may change it.
_RESUME_KEEPS = {"protocol": "protocol", "samples": "samples", "limit": "limit", "cache": "cache", "judge": "judge",
                 "judge_base_url": "judge_base_url", "judge_api_key_env": "judge_api_key_env", "rag": "rag",
                 "k": "rag_k", "rag_index": "rag_index",
                 "agent": "agent", "tools": "tools_url", "max_steps": "agent_max_steps",
                 "tool_budget": "agent_tool_budget", "write": "write"}


def refuse_changes(info: Any, options: Any, given: dict[str, Any]) -> None:
    """A resume continues with every option its run started with; one given differently is refused, named."""
    from chronokg.errors import ChronoKGError
    from chronokg.eval.cutoff import parse_declared

    kept: dict[str, Any] = {flag: getattr(options, field) for flag, field in _RESUME_KEEPS.items()}
    kept["model"] = [m["spec"] for m in info.models]
    kept["questions"] = [Path(q["path"]) for q in info.questions]
    kept["family_option"] = options.family_options
    kept["cutoff"] = options.cutoffs
    kept["log_dir"] = given.get("log_dir")  # where: not part of the run
    kept["concurrency"] = given.get("concurrency")
    for flag, value in given.items():
        now: Any = value
        if flag in ("questions", "model"):
            if not value:
                continue
            now = [Path(v) for v in value] if flag == "questions" else list(value)
        elif flag == "family_option":
            now = parse_family_options(value or [])
        elif flag == "cutoff":
            now = parse_declared(value)
        elif flag == "rag_index" and value is not None:
            now = str(value)
        elif flag in ("base_url", "api_key_env"):
            if all(m.get(flag) in (None, value) for m in info.models):
                continue
            name = "--" + flag.replace("_", "-")
            raise ChronoKGError(f"--resume {info.run_id}: it started with other {name} values; a resume keeps "
                                "them (start a new run to change them)")
        if flag in kept and now != kept[flag]:
            name = "QUESTIONS" if flag == "questions" else "--" + flag.replace("_", "-")
            raise ChronoKGError(f"--resume {info.run_id}: {name} was {kept[flag]!r} when the run started, "
                                f"{now!r} now; a resume keeps every option (start a new run to change it)")


def parse_family_options(items: list[str]) -> dict[str, dict[str, Any]]:
    """`FAMILY.KEY=VALUE` items as {family: {key: value}} (VALUE as JSON when it parses, else the text)."""
    import json

    from chronokg.errors import ChronoKGError

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        family, dot, key = name.strip().partition(".")
        if not sep or not dot or not family or not key:
            raise ChronoKGError(f"--family-option {item!r}: write FAMILY.KEY=VALUE (e.g. micxr.stagewise=true)")
        try:
            value: Any = json.loads(text)
        except json.JSONDecodeError:
            value = text
        out.setdefault(family, {})[key.strip()] = value
    return out


class _NoStore:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _maybe_store() -> Any:
    """The store, read-only, if there is one (baselines and snapshots need it; a model run does not)."""
    from chronokg.errors import StoreError

    try:
        cm = opened(read_only=True)
        store = cm.__enter__()
    except StoreError as exc:
        say(err, ("note:", "yellow"), f" no store to read ({exc}); running without one")
        return _NoStore()

    class _Open:
        def __enter__(self) -> Any:
            return store

        def __exit__(self, *exc: object) -> None:
            cm.__exit__(None, None, None)

    return _Open()


def _write(folder: Path, info: Any, questions: list[Any], records: list[Any] | None = None) -> None:
    """The run's predictions into the graph (`records`: its last record of every unit, else read from the folder)."""
    from chronokg.errors import StoreError
    from chronokg.eval.graph import write_predictions
    from chronokg.eval.log import latest

    try:
        with opened() as store:
            report = write_predictions(store, info, questions, records if records is not None else
                                       latest(folder / "samples.jsonl").values())
        say(console, f"predictions in the graph: {report.created.get('Prediction', 0):,} new, "
                     f"{report.unchanged.get('Prediction', 0):,} already there")
    except StoreError as exc:
        say(err, ("note:", "yellow"), f" predictions not written to the graph: {exc}")


def _summary(records: list[Any]) -> None:
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in records:
        row = per[r.model]
        row[0] += 1
        row[1] += bool(r.correct) if r.ok else 0
        row[2] += 0 if r.ok else 1
        row[3] += r.prompt_tokens
        row[4] += r.completion_tokens
    rows = [[spec, f"{n:,}", f"{ok:,}", f"{ok / (n - failed):.1%}" if n - failed else "—", f"{failed:,}",
             f"{tin:,}", f"{tout:,}"] for spec, (n, ok, failed, tin, tout) in sorted(per.items())]
    table(console, ["model", "samples", "correct", "accuracy", "failed", "tokens in", "tokens out"], rows,
          title="summary")
    _failures(records)


FIRST_MESSAGE_CHARS = 300


def _failures(records: list[Any]) -> None:
    """Why samples failed, on the terminal: counts by reason (the error's type) and the first message of each,
    so a wrong key or a down server is read here, not dug out of samples.jsonl."""
    counts: dict[str, int] = defaultdict(int)
    first: dict[str, tuple[str, str]] = {}
    for r in records:
        if r.error is None:
            continue
        reason, _, message = r.error.partition(": ")
        counts[reason] += 1
        first.setdefault(reason, (r.model, message.strip() or reason))
    if not counts:
        return
    rows = []
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        model, message = first[reason]
        cut = message if len(message) <= FIRST_MESSAGE_CHARS else message[:FIRST_MESSAGE_CHARS] + "…"
        rows.append([reason, f"{n:,}", cut if cut.startswith(model) else f"{model}: {cut}"])
    table(console, ["reason", "samples", "first message"], rows,
          title="failed samples by reason (all of them: samples.jsonl)")


@eval_app.command("chroknow-prompt")
def chroknow_prompt_command(
    run: Annotated[Path, typer.Argument(help="A finished ChroKnow knowledge-check run folder")],
    template: Annotated[str, typer.Option(help="Whose categories pick the facts: generation, mcqa or tf")] = (
        "generation"),
    fraction: Annotated[float, typer.Option(min=0.0001, max=1.0, help="Share of each category's facts sampled "
                                                                      "(the seed's 10 %)")] = 0.1,
    prev_span: Annotated[int, typer.Option(min=1, help="Earlier years traversed per target year")] = 3,
    next_span: Annotated[int, typer.Option(min=1, help="Later years traversed per target year")] = 3,
    seed: Annotated[int, typer.Option(help="Seed of the fact sample")] = 0,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only these models of the run")] = None,
    log_dir: Annotated[Path | None, typer.Option(help="Where the pass's run folder goes (default: beside RUN)")] = (
        None),
    concurrency: Annotated[int, typer.Option(min=1, help="Facts traversed at once")] = 8,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Use the model response cache")] = True,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Write the predictions into the graph")] = True,
) -> None:
    """ChroKnowPrompt over a run: traverse neighbouring years for a sample of each model's Partial_known facts;
    writes a run folder whose metric `chroknow.prompt_gain` is the gain in Known."""
    from chronokg.eval import chroknow_prompt as ckp
    from chronokg.metrics.runs import metrics, run_questions, run_samples

    def body() -> None:
        source, samples = run_samples(run)
        questions = run_questions(source)
        options = ckp.PromptOptions(template=template, fraction=fraction, prev_span=prev_span, next_span=next_span,
                                    seed=seed, concurrency=concurrency, cache=cache)
        folder, info = ckp.prepare(run, log_dir, options)
        with _maybe_store() as store:
            info, counts = ckp.run_pass(folder, info, samples, questions, store, model)
        say(console, "ChroKnowPrompt run ", (info.run_id, "bold"), f" in {folder}: {info.status} "
                     f"({counts['facts']:,} sampled facts, {counts['skipped']:,} already done)")
        _, records = run_samples(folder)
        _metrics_table([v for v in metrics(records) if v.metric == "chroknow.prompt_gain"])
        if write:
            _write(folder, info, questions)
    guarded(body)


@eval_app.command("metrics")
def metrics_command(
    run: Annotated[Path, typer.Argument(help="A run folder")],
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only these models")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
    from_graph: Annotated[bool, typer.Option(help="Count over the run's Prediction nodes in the store (Cypher) "
                                                  "instead of its samples")] = False,
) -> None:
    """Every metric of a run, per model (the seeds' metrics, and chronokg's own)."""

    from chronokg.metrics.runs import metrics, run_samples

    def body() -> None:
        from chronokg.errors import ChronoKGError

        info, samples = run_samples(run)
        known = [str(m["spec"]) for m in info.models]
        unknown = [m for m in model or [] if m not in known]
        if unknown:  # its metrics would print as a model that answered nothing
            raise ChronoKGError(f"--model {unknown[0]}: not a model of {run} (its models: {', '.join(known)})")
        if from_graph:
            with opened(read_only=True) as store:
                values = metrics(samples, model, store, info.run_id, info)
        else:
            values = metrics(samples, model, info=info)
        if fmt == "json":
            print(json_text([v.model_dump(mode="json") for v in values]))
            return
        _metrics_table(values)
    guarded(body)


def _short(value: Any, depth: int = 0) -> str:
    """A metric's value or groups, short: numbers to 3 decimals, one line per group, nested groups in brackets
    (a group's accuracy, share or count alone, with its n where it has one; every field: --format json)."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, dict):
        if depth == 1:
            for key in ("accuracy", "share", "count"):
                if key in value and not isinstance(value[key], dict):
                    n = f" (n {value['n']:,})" if isinstance(value.get("n"), int) and key != "count" else ""
                    return _short(value[key], 2) + n
        parts = [f"{k}: {_short(v, depth + 1)}" if depth == 0 else f"{k} {_short(v, depth + 1)}"
                 for k, v in value.items()
                 if not isinstance(v, list) and not (isinstance(v, str) and depth) and not str(k).endswith(" · shares")]
        text = ("\n" if depth == 0 else ", ").join(p for p in parts if not p.endswith(" —") and p.strip())
        return f"({text})" if depth else text
    return str(value)


def _metrics_table(values: list[Any]) -> None:
    rows = []
    for v in values:
        extra = ""
        if v.details.get("cutoff_estimate") is None and "cutoff_estimate" in v.details:
            extra = " (no cutoff found)"
        elif "cutoff_estimate" in v.details:
            extra = f" (cutoff ≈ {v.details['cutoff_estimate']}, Mann-Kendall p = " + (
                f"{v.details['mann_kendall']['p']:.3g})" if "mann_kendall" in v.details else "—)")
        elif isinstance(v.groups.get("post"), dict) and "stale" in v.groups["post"]:
            extra = f"\nstale {v.groups['post']['stale']:,} of the post-cutoff answers"
        rows.append([v.metric, v.model, _short(v.value), _short(v.groups) + extra])
    table(console, ["metric", "model", "value", "by group"], rows, title="metrics",
          priority=["metric", "value", "model", "by group"])


@eval_app.command("score")
def score_command(
    questions: Annotated[Path, typer.Argument(help="The questions (canonical JSONL)")],
    predictions: Annotated[Path, typer.Argument(help="{id, output} JSON lines, a JSON list of records with "
                                                     "chronokg_id and model_answer, a seed's result CSV, an "
                                                     "inspect_ai log (.eval/.json) or lm-eval's samples JSONL")],
    model: Annotated[str, typer.Option(help="A name for the model that produced them")] = "external",
    protocol: Annotated[str, typer.Option(help="seed or chronokg extraction")] = "seed",
    log_dir: Annotated[Path, typer.Option(help="Where the run folder goes")] = Path("runs"),
    write: Annotated[bool, typer.Option("--write/--no-write", help="Write the predictions into the graph")] = False,
    cutoff: Annotated[list[str] | None, typer.Option(help="The model's knowledge cutoff as MODEL=DATE, MODEL the "
                                                          "--model name (default: chronokg's rule, as on eval "
                                                          "run): pre/post-cutoff metrics")] = None,
) -> None:
    """Score outputs produced elsewhere as a run (then `eval metrics`, `eval report` work on it)."""
    from chronokg.eval.cutoff import parse_declared
    from chronokg.eval.runner import load_questions
    from chronokg.metrics.runs import metrics, run_samples, score_outputs

    def body() -> None:
        folder = score_outputs(questions, predictions, model, protocol, log_dir, parse_declared(cutoff))
        say(console, f"scored run in {folder}")
        info, samples = run_samples(folder)
        _metrics_table(metrics(samples, info=info))
        if write:
            _write(folder, info, load_questions([questions], None))
    guarded(body)

"""`chronokg eval run|metrics|export|score|report`: evaluation runs from the command line."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Annotated, Any

import typer

from chronokg.cli.common import console, err, guarded, opened

eval_app = typer.Typer(help="Evaluate models on generated benchmarks: run, score, metrics, reports.",
                       no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")


@eval_app.command("run")
def run_command(
    questions: Annotated[list[Path] | None, typer.Argument(help="Question files (canonical JSONL)")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Model spec (repeat for several): "
                                                    "openai/..., openai-compat/..., vllm/..., baseline/...")] = None,
    base_url: Annotated[str | None, typer.Option(help="Base URL of the OpenAI-compatible server of the "
                                                      "openai-compat models")] = None,
    log_dir: Annotated[Path, typer.Option(help="Where run folders go")] = Path("runs"),
    resume: Annotated[Path | None, typer.Option(help="Continue the run in this folder")] = None,
    protocol: Annotated[str, typer.Option(help="seed (published settings and extraction) or chronokg")] = "seed",
    samples: Annotated[int, typer.Option(min=1, help="Samples per question")] = 1,
    concurrency: Annotated[int, typer.Option(min=1, help="Samples in flight at once")] = 32,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the first N questions of each file")] = None,
    cache: Annotated[bool, typer.Option("--cache/--no-cache", help="Use the model response cache")] = True,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Write the predictions into the graph")] = True,
) -> None:
    """Send the questions to the models, log every sample, score them, write predictions into the graph."""
    from chronokg.cli.progress import run_progress
    from chronokg.errors import ChronoKGError
    from chronokg.eval import runner
    from chronokg.eval.log import read_info

    def body() -> None:
        if resume is not None:
            info = read_info(resume)
            folder = resume
            files = [Path(q["path"]) for q in info.questions]
            options = runner.RunOptions.model_validate(info.options)
        else:
            if not questions or not model:
                raise ChronoKGError("give question files and at least one --model (or --resume RUN_DIR)")
            options = runner.RunOptions(protocol=protocol, samples=samples, concurrency=concurrency, limit=limit,
                                        cache=cache)
            entries = [runner.ModelEntry(spec=m, base_url=base_url if not m.startswith("baseline/") else None)
                       for m in model]
            files = list(questions)
        loaded = runner.load_questions(files, options.limit)
        store_cm = _maybe_store()
        with store_cm as store:
            if resume is None:
                from chronokg.bench import snapshot

                folder, info = runner.prepare(log_dir, files, entries, options,
                                              snapshot=snapshot.current(store) if store is not None else None,
                                              store_uri=store.uri if store is not None else None)
            with run_progress(console) as progress:
                info, _ = runner.run(folder, info, loaded, store, on_start=progress.begin,
                                     on_record=progress.record)
        console.print(f"run [bold]{info.run_id}[/] in {folder}: {info.status}")
        _summary(folder)
        if write:
            _write(folder, info, loaded)
    guarded(body)


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
        err.print(f"[yellow]note:[/] no store to read ({exc}); running without one")
        return _NoStore()

    class _Open:
        def __enter__(self) -> Any:
            return store

        def __exit__(self, *exc: object) -> None:
            cm.__exit__(None, None, None)

    return _Open()


def _write(folder: Path, info: Any, questions: list[Any]) -> None:
    from chronokg.errors import StoreError
    from chronokg.eval.graph import write_predictions
    from chronokg.eval.log import latest

    try:
        with opened() as store:
            report = write_predictions(store, info, questions, latest(folder / "samples.jsonl").values())
        console.print(f"predictions in the graph: {report.created.get('Prediction', 0):,} new, "
                      f"{report.unchanged.get('Prediction', 0):,} already there")
    except StoreError as exc:
        err.print(f"[yellow]note:[/] predictions not written to the graph: {exc}")


def _summary(folder: Path) -> None:
    from rich.table import Table

    from chronokg.eval.log import latest

    per: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    for r in latest(folder / "samples.jsonl").values():
        row = per[r.model]
        row[0] += 1
        row[1] += bool(r.correct) if r.ok else 0
        row[2] += 0 if r.ok else 1
        row[3] += r.prompt_tokens
        row[4] += r.completion_tokens
    table = Table(title="summary", header_style="bold cyan")
    for c in ("model", "samples", "correct", "accuracy", "failed", "tokens in", "tokens out"):
        table.add_column(c, justify="left" if c == "model" else "right")
    for spec, (n, ok, failed, tin, tout) in sorted(per.items()):
        done = n - failed
        table.add_row(spec, f"{n:,}", f"{ok:,}", f"{ok / done:.1%}" if done else "—", f"{failed:,}", f"{tin:,}",
                      f"{tout:,}")
    console.print(table)

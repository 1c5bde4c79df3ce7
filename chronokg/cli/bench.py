"""`chronokg generate FAMILY`, `chronokg bench verify|export`, `chronokg snapshot`.

`generate FAMILY` takes the family's options as flags (built from its options model, like
the query commands), writes the questions as canonical JSONL (`--out`), the seed's own
files (`--format seed`) and, unless `--no-write`, stores them in the graph.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from chronokg.cli.common import console, err, guarded, opened, said_beside
from chronokg.cli.lazy import Command
from chronokg.cli.queries import option_parameter, split_lists
from chronokg.cli.render import json_text, say


def family_command(name: str) -> Command:
    """The `generate NAME` command, with the family's options as flags."""
    from chronokg.bench.family import FAMILIES

    spec = FAMILIES.get(name)

    def command(**values: Any) -> None:
        ctx: typer.Context = values.pop("ctx")
        for field in spec.options.model_fields:  # only the flags given: the options know what was asked
            source = ctx.get_parameter_source(field)
            if source is not None and source.name == "DEFAULT":  # typer may bring its own click: by name
                values.pop(field, None)
        out: Path = values.pop("out")
        fmt: str = values.pop("fmt")
        write: bool = values.pop("write")
        since: str | None = values.pop("since")
        model: str | None = values.pop("model")
        base_url: str | None = values.pop("base_url")
        api_key_env: str | None = values.pop("api_key_env")

        def body() -> None:
            options = family_options(name, split_lists(values))
            generate_and_save(name, options, out, fmt, write, since, model, base_url, api_key_env)
        guarded(body)

    parameters = [option_parameter(n, f) for n, f in spec.options.model_fields.items()]
    def flag(name: str, annotation: Any, default: Any = inspect.Parameter.empty) -> inspect.Parameter:
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)

    parameters += [
        flag("ctx", typer.Context),
        flag("out", Annotated[Path, typer.Option("--out", "-o", help="Where the questions go: a .jsonl file "
                                                                     "(canonical) or, with --format seed, a folder")]),
        flag("fmt", Annotated[str, typer.Option("--format", help="canonical (inspect_ai Sample fields) or seed (the "
                                                                 "published benchmark's own files)")], "canonical"),
        flag("write", Annotated[bool, typer.Option("--write/--no-write", help="Also store the questions (and the "
                                                                             "snapshot) in the graph")], True),
        flag("since", Annotated[str | None, typer.Option(help="Only the questions whose evidence is new or changed "
                                                              "since an earlier question file (or a snapshot id)")],
             None),
        flag("model", Annotated[str | None, typer.Option(help="A model spec for the steps that need an LLM "
                                                              "(otherwise templates)")], None),
        flag("base_url", Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server "
                                                                 "(openai-compat/ specs)")], None),
        flag("api_key_env", Annotated[str | None, typer.Option(help="Environment variable holding --model's API "
                                                                    "key")], None),
    ]
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__doc__ = spec.help
    app = typer.Typer(add_completion=False, rich_markup_mode=None)  # plain help: ~half the lines at 80 columns
    app.command(name)(command)
    return typer.main.get_command(app)


def family_options(name: str, values: dict[str, Any]) -> Any:
    """The family's options from the flags; an invalid value is one clear error naming the flag."""
    from pydantic import ValidationError

    from chronokg.bench.family import FAMILIES
    from chronokg.errors import ChronoKGError

    try:
        return FAMILIES.get(name).options.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"--{str(e['loc'][0]).replace('_', '-') if e['loc'] else '?'}: {e['msg']}"
                             for e in exc.errors())
        raise ChronoKGError(f"generate {name}: {problems}") from None


def generate_and_save(family: str, options: Any, out: Path, fmt: str, write: bool, since: str | None,
                      model_spec: str | None, base_url: str | None, api_key_env: str | None = None) -> None:
    from chronokg.bench import snapshot
    from chronokg.bench.export import write_seed
    from chronokg.bench.family import generate
    from chronokg.bench.graph import store_questions
    from chronokg.bench.question import write_jsonl
    from chronokg.bench.since import baseline, new_or_changed
    from chronokg.cli.progress import progress_bar
    from chronokg.errors import ChronoKGError

    if fmt not in {"canonical", "seed"}:
        raise ChronoKGError(f"--format must be canonical or seed, not {fmt!r}")
    if fmt == "canonical" and out.is_dir():
        raise ChronoKGError(f"--out {out} is a folder: give a .jsonl file (a folder is for --format seed)")
    if fmt == "seed" and out.exists() and not out.is_dir():
        raise ChronoKGError(f"--out {out} is a file: --format seed writes a folder of the seed's files")
    model = None
    if model_spec is not None:
        from chronokg.bench.llm import open_model

        model = open_model(model_spec, base_url, api_key_env)
    with opened(read_only=not write, must_exist=True) as store, progress_bar(console) as bar:
        base = baseline(store, since, family) if since else None
        snap = snapshot.current(store)
        questions, ctx = generate(family, store, snap, options, since=base.added if base else None, model=model,
                                  progress=bar)
        if base is not None:
            questions = new_or_changed(questions, base)
        if not questions and since is None:  # nothing written anywhere: no empty file, no snapshot
            from chronokg.bench.family import FAMILIES

            hint = "; ".join(ctx.notes[:3])
            raise ChronoKGError(f"generate {family}: no questions from {store.uri}: it holds none of the data "
                                f"this family is generated from ({family} builds from {FAMILIES.get(family).needs})"
                                + (f" ({hint})" if hint else ""))
        if write:
            snapshot.record(store)
            store_questions(store, questions)
    told = said_beside(out) if fmt == "canonical" else console
    if fmt == "canonical":
        n = write_jsonl(out, questions)
        say(told, ("wrote", "green"), f" {n:,} questions to {out}")
    else:
        files = write_seed(family, questions, out)
        for path, count in files.items():
            say(console, ("wrote", "green"), f" {count:,} records to {path}")
    by_variant = Counter(q.variant for q in questions)
    for variant, count in sorted(by_variant.items()):
        say(told, f"  {variant}: {count:,}")
    say(told, f"snapshot {snap}" + (" (stored with the questions)" if write else "")
        + (f"; new or changed since {base.snapshot}" if base is not None else ""))
    for note in ctx.notes[:20]:
        say(err, ("note:", "yellow"), f" {note}")
    if len(ctx.notes) > 20:
        say(err, ("note:", "yellow"), f" … and {len(ctx.notes) - 20} more")


def _evidence_changes(changed: list[Any], limit: int = 20) -> None:
    """Each changed answer key once: the evidence rows it no longer returns (-) and the new ones (+)."""
    seen: set[str] = set()
    for c in changed:
        key = f"{c.query} {json.dumps(c.params, sort_keys=True, ensure_ascii=False)}"
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > limit:
            console.print("… and more changed keys (--format json lists every one with its evidence)")
            return
        old = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in c.old_evidence]
        new = [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in c.new_evidence]
        say(console, (key, "bold"), f": {len(old)} evidence row(s) then, {len(new)} now")
        for sign, rows in (("-", [r for r in old if r not in new]), ("+", [r for r in new if r not in old])):
            for row in rows[:5]:
                say(console, f"  {sign} {row[:200]}")


def provider() -> dict[str, Callable[[], Command]]:
    from chronokg.bench.family import FAMILIES

    def maker(name: str) -> Callable[[], Command]:
        return lambda: family_command(name)

    return {name: maker(name) for name in FAMILIES.names()}


def register(app: typer.Typer, bench_app: typer.Typer) -> None:
    """`snapshot`, `bench verify`, `bench export`, `bench trajectory` (`generate FAMILY` comes from `provider`)."""
    from chronokg.cli.lifecycle import register_benchmarks

    register_trajectory(bench_app)
    register_benchmarks(bench_app)

    @app.command("snapshot")
    def snapshot_command(
        record: Annotated[bool, typer.Option("--record", help="Keep it in the store, for --since later")] = False,
    ) -> None:
        """Print the store's snapshot id: a hash of the source releases it holds."""
        from chronokg.bench import snapshot

        def body() -> None:
            with opened(read_only=not record) as store:
                sid = snapshot.record(store) if record else snapshot.current(store)
            print(sid)
        guarded(body)

    @bench_app.command("verify")
    def verify(
        path: Annotated[Path, typer.Argument(help="Questions (canonical JSONL from chronokg generate)")],
        fmt: Annotated[str, typer.Option("--format", "-f", help="table or json")] = "table",
        fail_on_change: Annotated[bool, typer.Option(help="Exit 1 when any question's answer changed (its "
                                                         "target or the target's text)")] = False,
        fail_on_evidence_change: Annotated[bool, typer.Option(help="Exit 1 when any answer key's evidence "
                                                                  "changed, even where the answer did not")] = False,
    ) -> None:
        """Re-run every answer key against the store; list the questions whose evidence changed, and say of each
        whether its answer changed too or only its evidence grew (a later version, the same answer)."""
        from chronokg.bench.verify import verify_questions
        from chronokg.cli.render import Format, emit

        def body() -> None:
            from chronokg.bench.question import read_jsonl

            questions = list(read_jsonl(path))
            with opened(read_only=True) as store:
                report = verify_questions(store, questions)
            if fmt == "json":
                print(json_text(report.model_dump(mode="json")))
            else:
                say(console, report.summary())
                emit(console, report.changed, Format.table, title="questions whose evidence changed",
                     columns=["id", "variant", "answer_changed", "old_target", "new_target", "old_answer",
                              "new_answer"])
                _evidence_changes(report.changed)
            if (fail_on_change and report.answers_changed) or (fail_on_evidence_change and report.evidence_changed):
                raise typer.Exit(1)
        guarded(body)

    @bench_app.command("export")
    def export(
        path: Annotated[Path, typer.Argument(help="Questions (canonical JSONL)")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the seed's files, or the dataset folder "
                                                              "(--format hf)")],
        fmt: Annotated[str, typer.Option("--format", help="seed (the seed benchmark's own files) or hf (a Hugging "
                                                          "Face dataset folder: parquet per family and protocol, "
                                                          "the items' dates, a dataset card)")] = "seed",
    ) -> None:
        """Write canonical questions in their seed benchmark's own file format, or as a dated Hugging Face dataset
        folder (--format hf; the dates and releases are read from the store the questions were generated from)."""
        from chronokg.bench.question import read_jsonl
        from chronokg.errors import ChronoKGError

        def body() -> None:
            if fmt == "hf":
                export_hf_folder(path, out)
                return
            if fmt != "seed":
                raise ChronoKGError(f"--format must be seed or hf, not {fmt!r}")
            from chronokg.bench.export import write_seed

            questions = list(read_jsonl(path))
            by_family: dict[str, list[Any]] = {}
            for q in questions:
                by_family.setdefault(q.family, []).append(q)
            for family, items in by_family.items():
                for file, count in write_seed(family, items, out).items():
                    say(console, ("wrote", "green"), f" {count:,} records to {file}")
        guarded(body)


def export_hf_folder(path: Path, out: Path) -> None:
    """`bench export --format hf`: the folder, then what it holds."""
    from chronokg.bench.hf import export_hf
    from chronokg.eval.item_dates import store_dates

    with opened(read_only=True, must_exist=True) as store:
        done = export_hf(store, path, out, store_dates)
    for name, n in done.configs.items():
        say(console, ("wrote", "green"), f" {n:,} questions to config {name} ({out / name})")
    say(console, f"dataset card {out / 'README.md'}; snapshot " + ", ".join(
        f"{sid} ({len(rs)} source release{'' if len(rs) == 1 else 's'})" for sid, rs in done.snapshots.items()))


def register_trajectory(bench_app: typer.Typer) -> None:
    @bench_app.command("trajectory")
    def trajectory(
        manifest: Annotated[Path, typer.Argument(help="JSON manifest of two or more guideline versions (topic, "
                                                      "organization, versions: pmid, year, title, path)")],
        model: Annotated[str, typer.Option(help="Model spec for extraction and verification")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the trajectory and difference files and "
                                                              "the questions (questions.jsonl)")],
        base_url: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server")] = None,
        api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding --model's API key")] = None,
    ) -> None:
        """A new TempoMed trajectory from guideline text, end to end: the seed's difference extraction and
        verification, the files its loader reads, loaded as a new release, and questions for what was added."""
        from chronokg.bench import snapshot
        from chronokg.bench.families.tempomed_texts import build, release_date
        from chronokg.bench.family import generate
        from chronokg.bench.graph import store_questions
        from chronokg.bench.llm import open_model
        from chronokg.bench.question import write_jsonl
        from chronokg.cli.render import load_summary
        from chronokg.ingest import tempomed

        def body() -> None:
            built = build(manifest, open_model(model, base_url, api_key_env), out)
            say(console, f"{built.extracted} differences extracted, {built.kept} verified (score 1) and kept; "
                         f"wrote {built.trajectory.name} and {len(built.diffs)} difference file(s)")
            if not built.diffs:
                err.print("[yellow]note:[/] no verified difference: nothing to load or ask")
                return
            with opened() as store:
                before = snapshot.record(store)
                summary = tempomed.load(store, [built.trajectory, *built.diffs], release_date=release_date())
                load_summary(console, summary)
                questions, _ = generate("tempomed", store, snapshot.record(store), {},
                                        since=snapshot.added_since(store, before))
                store_questions(store, questions)
            n = write_jsonl(out / "questions.jsonl", questions)
            say(console, ("wrote", "green"), f" {n:,} questions for the new change pairs to {out / 'questions.jsonl'}")
        guarded(body)

"""What `chronokg demo` shows: each catalog query on the demo corpus, explained."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.panel import Panel

from chronokg.cli.demo_release import FROZEN, frozen_note, show_later_release
from chronokg.cli.render import Format, emit, heading, load_summary, panel, say, text
from chronokg.demo.corpus import load_demo
from chronokg.demo.sources import load_sources
from chronokg.graph.store import GraphStore
from chronokg.queries import catalog


def run_showcase(store: GraphStore, console: Console) -> None:
    if console.is_terminal:
        console.print(Panel.fit(text(f"chronokg demo — store {store.uri} ({store.engine})"), style="bold"))
    else:
        say(console, (f"chronokg demo — store {store.uri} ({store.engine})", "bold"))
    load_summary(console, load_demo(store))
    sources = [SourceRow(source=x.source_kind, records=x.records, files=len(x.paths), facts=x.staged.get("Fact", 0))
               for x in load_sources(store)]
    emit(console, sources, Format.table, title="a slice of every other source (their own loaders)")

    def show(title: str, explain: str) -> None:
        heading(console, title)
        say(console, (explain, "dim"))

    cols = ["decision_id", "recommendation", "guideline", "guideline_year"]
    for day in (dt.date(2008, 6, 1), dt.date(2016, 6, 1)):
        show(f"recommended_on({day}, topic='resuscitation')",
             "Each decision answered from the AHA guideline version in force that day.")
        emit(console, catalog.recommended_on(store, day, topic="resuscitation"), Format.table, columns=cols)

    show("trajectory('aha-ecc-2010')", "Any version's id selects the whole supersession chain, oldest first.")
    emit(console, catalog.trajectory(store, "aha-ecc-2010"), Format.table,
         columns=["pmid", "year", "caption", "supersedes", "superseded_by"])

    show("timeline('hypertension-goal-older-adults')", "Every version of one recommendation, with its validity.")
    emit(console, catalog.timeline(store, "hypertension-goal-older-adults"), Format.table,
         columns=["value", "valid_from", "valid_to", "precision"])

    show("changed_between(2016-01-01, 2023-01-01)", "What a model trained on 2016 knowledge would now get wrong.")
    emit(console, catalog.changed_between(store, dt.date(2016, 1, 1), dt.date(2023, 1, 1)), Format.table)

    show("facts_as_of('un-secretary-general', valid 2018-01-01)",
         "Bitemporal: the same question, as known in mid-2016 (before the term ended) and as known now.")
    for known in (dt.date(2016, 6, 1), None):
        rows = catalog.facts_as_of(store, dt.date(2018, 1, 1), subject="un-secretary-general", known_at=known)
        emit(console, rows, Format.table, title=f"known at {known or 'now'}",
             columns=["object_caption", "valid_from", "valid_to", "known_from", "known_to"])

    with tempfile.TemporaryDirectory(prefix="chronokg-demo-") as tmp:
        run = show_benchmark(store, console, show, Path(tmp))
        show_families(store, console, show)
        # The research loop (chronokg/demo/loop.py) is shown here: one call, after the benchmarks, before the tools.
        show_tools(store, console, show)

        show("stats()", "Counts per label and relationship type.")
        emit(console, [r for r in catalog.stats(store) if r.kind != "source"], Format.table,
             columns=["kind", "name", "count"])
        show_later_release(console, show, run, Path(tmp))


def show_benchmark(store: GraphStore, console: Console, show: Callable[[str, str], None], tmp: Path) -> Path:
    """Generate a TempoMed-style benchmark from the demo's change pairs, verify it, and evaluate baselines; the
    run's folder (in `tmp`) is returned for the later release's re-scoring."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.bench.verify import verify_questions
    from chronokg.eval import runner
    from chronokg.eval.log import latest
    from chronokg.metrics.tempomed import ACCURACY, ACCURACY_BY_YEAR, CONSISTENCY

    show("generate tempomed", "Questions computed from the graph: each change pair gives up-to-date and "
                              "historical MCQs (template stems, distractors from other trajectories) and "
                              "year-sweep probes; every answer is a named query (decision-at).")
    questions, _ = generate("tempomed", store, snapshot.current(store),
                            {"protocol": "chronokg", "probes": True, "probe_years": (2000, 2024)})
    sample = next(q for q in questions if q.variant.startswith("mcq") and q.metadata["target"] == "historical")
    panel(console, sample.input.strip(), f"{sample.variant} · target {sample.target} · key "
                                         f"{sample.answer_key.query}{sample.answer_key.params}", width=110)
    report = verify_questions(store, questions)
    say(console, f"bench verify: {report.summary()}")

    show("eval run (reference baselines)", "An oracle, a model that knows only today, and a model frozen at "
                                           "2012: the metrics show the signature of each.")
    qfile = tmp / "demo.jsonl"
    write_jsonl(qfile, questions)
    models = [runner.ModelEntry(spec=m) for m in ("baseline/oracle", "baseline/latest-only", FROZEN)]
    folder, info = runner.prepare(tmp / "runs", [qfile], models, runner.RunOptions(protocol="chronokg"))
    runner.run(folder, info, runner.load_questions([qfile], None), store)
    samples = [r for r in latest(folder / "samples.jsonl").values() if r.ok]
    rows = []
    for m in models:
        acc = ACCURACY.compute(samples, m.spec).groups
        years = ACCURACY_BY_YEAR.compute(samples, m.spec).details
        patterns = CONSISTENCY.compute(samples, m.spec).groups
        top = max(patterns, key=lambda k: patterns[k]["count"])
        rows.append(DemoRow(model=m.spec, up_to_date=acc["up_to_date"]["accuracy"],
                            historical=acc["historical"]["accuracy"], probes=acc["probe"]["accuracy"],
                            cutoff_estimate=years.get("cutoff_estimate"), most_common_pattern=top))
    emit(console, rows, Format.table)
    say(console, (frozen_note(samples), "dim"))
    return folder


def show_families(store: GraphStore, console: Console, show: Callable[[str, str], None]) -> None:
    """`generate` for every family on the demo store: how many questions each builds, and its notes."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import FAMILIES, generate

    show("generate (every family)", "Each benchmark family built from the demo store: guideline change pairs, "
                                    "DriftMed pairs, ChroKnow rows, CXR timelines, a QA set with updated answers.")
    snap = snapshot.current(store)
    rows = []
    for name in FAMILIES.names():
        questions, ctx = generate(name, store, snap, {})
        rows.append(FamilyRow(family=name, questions=len(questions), variants=len({q.variant for q in questions}),
                              notes=len(ctx.notes), first_note=ctx.notes[0] if ctx.notes else ""))
    emit(console, rows, Format.table)


def show_tools(store: GraphStore, console: Console, show: Callable[[str, str], None]) -> None:
    """The tools an agent gets (the query specs tagged 'tool' and guarded Cypher), called through a `ToolHost`
    over a read-only handle of the store: what `chronokg serve http|mcp` and `eval run --agent tools` do."""
    from chronokg.errors import ChronoKGError
    from chronokg.graph.open import open_store
    from chronokg.serve.host import ToolHost

    show("tools for agents", "Declared once from the query specs and served in process, by 'chronokg serve "
                             "http|mcp' and to 'eval run --agent tools'; every read, an agent's own Cypher "
                             "included, goes through the read-only guard with time, row and size limits.")
    store.save()  # an embedded writer's checkpoint, which a read-only handle loads (a no-op elsewhere)
    try:
        reader = open_store(store.uri, read_only=True)
    except ChronoKGError as exc:  # an in-memory store has no second handle
        say(console, (f"skipped: {exc}", "dim"))
        return
    calls: list[tuple[str, dict[str, object]]] = [
        ("decision_at", {"decision": "adult-cpr-compression-depth", "date": "2012-06-01"}),
        ("cypher", {"query": "MATCH (f:Fact) RETURN count(f) AS facts"}),
        ("cypher", {"query": "MATCH (f:Fact) WITH collect(f) AS fs FOREACH (f IN fs | DETACH DELETE f)"}),
        ("cypher", {"query": "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line"}),
    ]
    with ToolHost(reader, close_store=True) as host:
        say(console, "tools: " + ", ".join(spec.name for spec in host.tool_specs()))
        for name, args in calls:
            result = host.call_tool(name, args)
            call = f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"
            answer = (f"{len(result.rows)} row(s): {result.content()[:100]}" if result.ok else
                      f"{result.error.type}: {result.error.message}" if result.error else "")
            mark = ("answered", "green") if result.ok else ("refused ", "red")
            say(console, mark, f" {call}")
            say(console, f"→ {answer}", indent=9)


class SourceRow(BaseModel):
    source: str
    records: int
    files: int
    facts: int


class FamilyRow(BaseModel):
    family: str
    questions: int
    variants: int
    notes: int
    first_note: str


class DemoRow(BaseModel):
    model: str
    up_to_date: float | None
    historical: float | None
    probes: float | None
    cutoff_estimate: int | None
    most_common_pattern: str

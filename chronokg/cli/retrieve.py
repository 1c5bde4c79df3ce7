"""`chronokg retrieve search|eval|current|refresh|web` and `chronokg index build|update|compact|stats`.

Everything heavy (faiss, the embedding worker, httpx, the SPARQL client) is imported inside the
commands, so `import chronokg.cli` stays light.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from chronokg.cli.common import FormatOpt, OptDateOpt, console, err, guarded, opened, state
from chronokg.cli.render import Format, emit, json_text, say

KindOpt = Annotated[str, typer.Option("--kind", help="auto (flat below 50,000 passages, else ivf), flat or ivf")]


def register(app: typer.Typer) -> None:
    """Add the `retrieve` and `index` groups to the root app."""
    retrieve_app = typer.Typer(help="Retrieval: passages valid on a date, up-to-date answers, web search.",
                               no_args_is_help=True)
    index_app = typer.Typer(help="The store's passage index (faiss, beside the store).", no_args_is_help=True)
    app.add_typer(retrieve_app, name="retrieve")
    app.add_typer(index_app, name="index")
    retrieve_app.command("search")(search)
    retrieve_app.command("eval")(evaluate)
    retrieve_app.command("current")(current)
    retrieve_app.command("refresh")(refresh)
    retrieve_app.command("web")(web)
    index_app.command("build")(build)
    index_app.command("update")(update)
    index_app.command("compact")(compact)
    index_app.command("stats")(stats)


def _folder(index: Path | None) -> Path:
    from chronokg.retrieval.rag import index_dir
    from chronokg.settings import Settings

    return index or index_dir(Settings(), state.store_uri)


IndexOpt = Annotated[Path | None, typer.Option("--index", help="Index folder [default: $CHRONOKG_RAG_INDEX, else "
                                                                "<store>.rag beside an embedded store]")]


class HitRow(BaseModel):
    rank: int
    score: float | None
    text: str
    source: str | None
    valid_from: dt.date | None
    valid_to: dt.date | None
    url: str | None
    kind: str


def search(
    query: Annotated[str, typer.Argument(help="What to look for")],
    as_of: OptDateOpt = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, max=1000, help="How many passages")] = 10,
    every_version: Annotated[bool, typer.Option("--all", help="Without --as-of: rank every version by "
                                                              "similarity alone (default: today's passages)")] = False,
    known_at: OptDateOpt = None,
    provider: Annotated[str, typer.Option(help="passages (the store's index) or a web engine: brave, google, "
                                               "wikipedia, searxng")] = "passages",
    index: IndexOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Passages valid on --as-of (or today), ranked by similarity; or a web engine's results."""
    def body() -> None:
        if provider == "passages":
            from chronokg.retrieval.rag import shared_retriever

            r = shared_retriever(_folder(index))  # warm in the local search process (chronokg.cli.search_daemon)
            hits = r.retrieve(query, as_of, k, scope="all" if every_version else "current", known_at=known_at)
        else:
            from chronokg.retrieval.providers import get_provider

            p = get_provider(provider)

            async def go() -> Any:
                try:
                    return await p.search(query, k=k, as_of=as_of)
                finally:
                    await p.aclose()
            hits = asyncio.run(go())
        if fmt is Format.json:
            print(json_text([h.model_dump(mode="json") for h in hits]))
            return
        emit(console, [HitRow(rank=h.rank, score=None if h.score is None else round(h.score, 4), text=h.text,
                              source=h.source or h.title, valid_from=h.valid_from, valid_to=h.valid_to, url=h.url,
                              kind=h.kind) for h in hits], fmt, title=f"{provider}: {query}")
    guarded(body)


def evaluate(
    questions: Annotated[Path, typer.Argument(help="Generated questions (canonical JSONL)", exists=True)],
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Passages per question")] = 2,
    variant: Annotated[str | None, typer.Option(help="Only variants starting with this, e.g. mcq5/historical")] = None,
    today: OptDateOpt = None,
    index: IndexOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """recall@k of the target version's passage and the stale-passage rate: time-aware, atemporal, today."""
    from chronokg.bench.question import read_jsonl
    from chronokg.retrieval.evaluate import evaluate as run
    from chronokg.retrieval.rag import Retriever

    def body() -> None:
        qs = [q for q in read_jsonl(questions) if variant is None or q.variant.startswith(variant)]
        r = Retriever.open(_folder(index))
        rows = [Metrics.model_validate(run(r, qs, mode, k, today).model_dump())
                for mode in ("time-aware", "atemporal", "today")]
        emit(console, rows, fmt, title=f"retrieval over {len(qs)} questions")
    guarded(body)


class Metrics(BaseModel):
    mode: str
    k: int
    questions: int
    without_target: int
    recall_at_k: float
    stale_rate: float
    hits: int


def current(
    questions: Annotated[Path, typer.Argument(help="Generated questions (canonical JSONL)", exists=True)],
    today: OptDateOpt = None,
    changed_only: Annotated[bool, typer.Option("--changed", help="Only questions whose answer changed")] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Each question's answer key re-run as of today: the answer then and now."""
    from chronokg.bench.question import read_jsonl
    from chronokg.retrieval.current import CurrentAnswer, current_answer

    def body() -> None:
        with opened(read_only=True) as store:
            rows: list[CurrentAnswer] = [current_answer(store, q, today) for q in read_jsonl(questions)]
        rows = [r for r in rows if r.changed or not changed_only]
        emit(console, rows, fmt, columns=None if fmt is Format.json else
             ["id", "today", "key_target", "target", "changed", "key_answer", "answer"])
    guarded(body)


def refresh(
    qid: Annotated[list[str] | None, typer.Option("--qid", help="Wikidata item (repeat)")] = None,
    pid: Annotated[list[str] | None, typer.Option("--pid", help="Property (repeat) [default: ChroKnowBench's "
                                                                "temporal properties]")] = None,
    questions: Annotated[Path | None, typer.Option(help="Take items and properties from these questions' answer "
                                                        "keys", exists=True)] = None,
    endpoint: Annotated[str | None, typer.Option(help="SPARQL endpoint [default: query.wikidata.org]")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Keep the endpoint's answers here")] = None,
    today: OptDateOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Ask Wikidata what is true now and record what changed, known from today."""
    from chronokg.ingest.wikidata import TEMPORAL_PROPERTIES
    from chronokg.ingest.wikidata_sparql import DEFAULT_ENDPOINT, SparqlClient
    from chronokg.retrieval import refresh as r

    def body() -> None:
        qids, pids = list(qid or []), list(pid or [])
        if questions is not None:
            from chronokg.bench.question import read_jsonl

            more_q, more_p = r.targets(read_jsonl(questions))
            qids += more_q
            pids += more_p if not pid else []
        if not qids and questions is not None:
            raise typer.BadParameter(f"{questions} names no Wikidata items (its questions have no Wikidata "
                                     "subject): name items with --qid", param_hint="--questions")
        if not qids:
            raise typer.BadParameter("name items with --qid or give --questions")
        client = SparqlClient(endpoint=endpoint or DEFAULT_ENDPOINT, cache_dir=cache_dir, refresh=True)
        with opened() as store:
            summary = r.refresh(store, qids, pids or TEMPORAL_PROPERTIES, client, today)
        if fmt is Format.json:
            print(json_text(summary.model_dump(mode="json")))
            return
        say(console, f"{summary.items} items, {len(summary.new_revisions)} new revisions, {summary.added} facts "
                      f"added and {summary.retracted} retracted (known from {summary.retrieved}); "
                      f"{len(summary.unchanged)} unchanged, {len(summary.stale)} behind the store, "
                      f"{len(summary.missing)} unknown to the endpoint")
        emit(console, summary.changes, fmt)
    guarded(body)


def web(
    question: Annotated[list[str] | None, typer.Argument(help="Questions to answer")] = None,
    questions: Annotated[Path | None, typer.Option(help="A JSONL file of {id, question} (the seed's "
                                                        "time-sensitive file)", exists=True)] = None,
    model: Annotated[str, typer.Option(help="Model spec for every LLM step")] = "openai/gpt-4o-mini",
    base_url: Annotated[str | None, typer.Option(help="The model server's base URL")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding --model's API key")] = None,
    wiki: Annotated[str | None, typer.Option(help="Provider of the Wikipedia path (seed: brave); 'none' to "
                                                  "skip it")] = "brave",
    chain: Annotated[str | None, typer.Option(help="Provider of the chain of action (seed: google)")] = "google",
    protocol: Annotated[str, typer.Option(help="seed (the published pipeline, quirks included) or chronokg")] = "seed",
    log: Annotated[Path, typer.Option(help="JSONL log: one record per question, every step (resumable)")] = Path(
        "websearch.jsonl"),
    concurrency: Annotated[int, typer.Option(min=1, help="Questions at once")] = 4,
) -> None:
    """The "When Benchmarks Age" web pipeline: an up-to-date answer per question, every step logged."""
    from chronokg.models import get_model
    from chronokg.retrieval.providers import get_provider
    from chronokg.retrieval.web.pipeline import WebPipeline

    def body() -> None:
        items: list[tuple[str | None, str]] = [(None, q) for q in question or []]
        if questions is not None:
            from chronokg.ingest.common import read_jsonl

            for _, rec in read_jsonl(questions):
                items.append((rec.get("id") or rec.get("question_id"), rec["question"]))
        if not items:
            raise typer.BadParameter("give questions as arguments or --questions FILE")
        if protocol not in ("seed", "chronokg"):
            raise typer.BadParameter("--protocol is seed or chronokg")
        client = get_model(model, base_url=base_url, api_key_env=api_key_env)
        pipe = WebPipeline(client, wiki_search=get_provider(wiki) if wiki and wiki != "none" else None,
                           chain_search=get_provider(chain) if chain and chain != "none" else None,
                           protocol="seed" if protocol == "seed" else "chronokg")

        async def go() -> Any:
            try:
                return await pipe.run(items, log, concurrency)
            finally:
                await pipe.aclose()
                await client.aclose()
        done = asyncio.run(go())
        for a in done:
            say(console, (a.question, "bold"), f" [{a.status}] {a.search_answer}")
        say(console, f"{len(done)} answered now, log: {log}")
    guarded(body)


class ReportRow(BaseModel):
    added: int
    changed: int
    removed: int
    unchanged: int
    rows: int
    alive: int
    kind: str
    embed_s: float
    total_s: float


def _update(index: Path | None, rebuild: bool, kind: str) -> None:
    from chronokg.retrieval.indexing import update_index

    if kind not in ("auto", "flat", "ivf"):
        raise typer.BadParameter("--kind is auto, flat or ivf")
    from chronokg.cli.progress import progress_bar

    folder = _folder(index)
    with opened(read_only=True) as store, progress_bar(err, lines=err) as bar:  # stderr: stdout keeps the report
        report = update_index(store, folder, rebuild=rebuild, kind=kind, progress=bar)  # type: ignore[arg-type]
    emit(console, [ReportRow.model_validate(report.model_dump())], Format.table, title=str(folder))


def build(
    rebuild: Annotated[bool, typer.Option(help="Start over: embed every passage again")] = False,
    kind: KindOpt = "auto",
    index: IndexOpt = None,
) -> None:
    """Build the passage index of the store (or bring an existing one up to date)."""
    guarded(lambda: _update(index, rebuild, kind))


def update(index: IndexOpt = None) -> None:
    """Add what loads added since the last update: only new passages are embedded."""
    guarded(lambda: _update(index, False, "auto"))


def compact(kind: KindOpt = "auto", index: IndexOpt = None) -> None:
    """Drop retired passages and re-choose flat or IVF (no re-embedding)."""
    def body() -> None:
        from chronokg.retrieval.indexing import compact as run

        report = run(_folder(index), kind)  # type: ignore[arg-type]
        emit(console, [ReportRow.model_validate(report.model_dump())], Format.table)
    guarded(body)


def stats(index: IndexOpt = None, fmt: FormatOpt = Format.table) -> None:
    """The index's model, kind, rows and size."""
    def body() -> None:
        from chronokg.retrieval.index import IndexMeta, PassageIndex

        idx = PassageIndex.open(_folder(index))

        class Stats(IndexMeta):
            folder: str
            size_mb: float

        emit(console, [Stats(**idx.meta.model_dump(), folder=str(idx.folder),
                             size_mb=round(idx.size_bytes() / 2**20, 2))], fmt,
             columns=None if fmt is Format.json else ["folder", "model", "kind", "rows", "alive", "size_mb",
                                                      "updated"])
    guarded(body)

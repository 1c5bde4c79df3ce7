"""Wikidata's other commands: `ingest wikidata-sparql` (a network query, not files), download, RDF export.

`ingest wikidata` (files) is built from SOURCES like every load."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chronokg.cli.common import Groups, console, guarded, opened, said_beside
from chronokg.cli.ingest_reports import wikidata as wikidata_report
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import load_summary, say
from chronokg.ingest.wikidata import ENTITY_DATA
from chronokg.ingest.wikidata_sparql import DEFAULT_ENDPOINT

if TYPE_CHECKING:
    from chronokg.ingest.wikidata import WikidataLoadSummary


class RdfFormat(StrEnum):
    nt = "nt"
    ttl = "ttl"


def _split(values: list[str]) -> list[str]:
    """Repeated options and comma-separated lists alike: `--qid Q1,Q2 --qid Q3`."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _report(summary: WikidataLoadSummary) -> None:
    load_summary(console, summary)
    wikidata_report(summary)


def register(groups: Groups) -> None:
    """Add `ingest wikidata-sparql`, `download wikidata` and `export rdf`."""

    @groups.ingest.command("wikidata-sparql")
    def ingest_wikidata_sparql(
        qid: Annotated[list[str], typer.Option("--qid", help="Item ids (repeat, or comma-separated)")],
        pid: Annotated[list[str] | None, typer.Option(
            "--pid", help="Property ids (repeat, or comma-separated) [default: ChroKnowBench's temporal ones]")] = None,
        endpoint: Annotated[str, typer.Option(help="SPARQL endpoint URL")] = DEFAULT_ENDPOINT,
        cache: Annotated[Path | None, typer.Option(
            help="Folder of cached responses [default: the user cache dir]", show_default=False)] = None,
        no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the cache")] = False,
        refresh: Annotated[bool, typer.Option(help="Ask the endpoint again, replacing cached responses")] = False,
        page_size: Annotated[int, typer.Option(min=1, help="Rows per request (LIMIT/OFFSET paging)")] = 5000,
    ) -> None:
        """Query a Wikidata SPARQL endpoint (needs the network) and load the same facts the JSON path makes."""
        from platformdirs import user_cache_dir

        from chronokg.ingest import wikidata, wikidata_sparql

        def body() -> None:
            qids, pids = _split(qid), _split(pid or []) or list(wikidata.TEMPORAL_PROPERTIES)
            try:
                wikidata.Selection.of(pids)
                for q in qids:
                    wikidata.entity_data_url(q)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
            folder = None if no_cache else (cache or Path(user_cache_dir("chronokg")) / "wikidata-sparql")
            client = wikidata_sparql.SparqlClient(endpoint=endpoint, cache_dir=folder, page_size=page_size,
                                                  refresh=refresh)
            with opened(load=True) as s, progress_bar(console) as bar:
                summary = wikidata_sparql.load(s, qids, pids, client, progress=bar)
            _report(summary)
            say(console, f"{summary.requests} requests, {summary.cache_hits} answered from the cache"
                          + (f" ({folder})" if folder else ""))
            if summary.missing:
                say(console, ("not found at the endpoint:", "yellow"), f" {', '.join(summary.missing)}")
        guarded(body)

    @groups.download.command("wikidata")
    def download_wikidata(
        qids: Annotated[list[str], typer.Argument(help="Entity ids, e.g. Q646148 Q2112")],
        out: Annotated[Path, typer.Option(help="Folder to save {QID}.json in")] = Path("wikidata"),
        base_url: Annotated[str, typer.Option(help="Where Special:EntityData lives")] = ENTITY_DATA,
    ) -> None:
        """Fetch entity JSON from Special:EntityData into a folder (load it with `ingest wikidata`)."""
        from chronokg.ingest import download, wikidata

        def body() -> None:
            try:
                urls = [(q, wikidata.entity_data_url(q, base_url)) for q in _split(qids)]
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
            for q, url in urls:
                with progress_bar(console) as bar:
                    got = download.fetch(url, out / f"{q}.json", progress=bar)
                say(console, ("saved", "green"), f" {got.path} ({got.bytes} bytes, sha256 {got.sha256[:12]}…)")
        guarded(body)

    @groups.export.command("rdf")
    def export_rdf(
        out: Annotated[Path, typer.Option(help="File to write")],
        fmt: Annotated[RdfFormat, typer.Option("--format", help="N-Triples or Turtle")] = RdfFormat.nt,
        include_retracted: Annotated[bool, typer.Option(
            help="Also export facts a newer revision retracted")] = False,
    ) -> None:
        """The store's Wikidata facts in Wikidata's RDF statement model (p:/ps:/pq:, wikibase:rank)."""
        from chronokg.ingest import wikidata_rdf

        def body() -> None:
            with opened(read_only=True) as s:
                graph = wikidata_rdf.store_graph(s, include_retracted=include_retracted)
            n = wikidata_rdf.write(graph, out, fmt.value)
            say(said_beside(out), ("wrote", "green"), f" {n} triples to {out}")
        guarded(body)

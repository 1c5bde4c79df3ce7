"""What a source prints after the common load summary, named by its `IngestOptions.report` in SOURCES."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table

from chronokg.cli.common import console

if TYPE_CHECKING:
    from chronokg.ingest.cxr import CxrLoadSummary
    from chronokg.ingest.umls import UmlsLoadSummary
    from chronokg.ingest.wikidata import WikidataLoadSummary


def cxr(summary: CxrLoadSummary) -> None:
    console.print(f"{summary.patients} patients, {summary.studies} studies, {summary.observations} "
                  f"observations, {summary.questions} questions")
    if summary.unmatched_questions:
        console.print(f"[yellow]{summary.unmatched_questions} question(s) have images matching no loaded "
                      "study[/]")


def umls(summary: UmlsLoadSummary) -> None:
    table = Table(title="UMLS releases", header_style="bold cyan")
    table.add_column("release", no_wrap=True)
    table.add_column("date", no_wrap=True)
    for c in ("rows", "kept rows", "relations", "opened", "continued", "closed", "concepts", "named"):
        table.add_column(c, justify="right")
    for r in summary.releases:
        if r.skipped:
            table.add_row(r.release, str(r.date), *(["already loaded: skipped"] + [""] * 7))
        else:
            table.add_row(r.release, str(r.date), *(str(v) for v in (
                r.rows, r.kept_rows, r.relations, r.opened, r.continued, r.closed, r.concepts, r.named)))
    console.print(table)


def wikidata(summary: WikidataLoadSummary) -> None:
    """Facts read, retractions, skipped statements by reason, and properties left out by --properties."""
    console.print(f"{summary.facts} statements read as facts; {summary.retracted} facts retracted by newer revisions")
    if summary.skipped:
        console.print("skipped: " + ", ".join(f"{k} {v}" for k, v in summary.skipped.items()))
        for reason, ids in summary.skipped_statements.items():
            rest = summary.skipped.get(reason, len(ids)) - len(ids)
            console.print(f"  {reason}: {', '.join(ids)}" + (f" and {rest:,} more" if rest > 0 else ""),
                          markup=False, highlight=False)
    not_selected: dict[str, int] = getattr(summary, "not_selected", {})
    if not_selected:
        pids = list(not_selected)
        more = f" and {len(pids) - 8} more" if len(pids) > 8 else ""
        console.print(f"[bold yellow]not loaded:[/] {len(pids)} properties outside --properties "
                      f"({', '.join(pids[:8])}{more}); include them with --properties all, or a list such as "
                      f"--properties {','.join(pids[:3])}")

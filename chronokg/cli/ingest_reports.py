"""What a source prints after the common load summary, named by its `IngestOptions.report` in SOURCES."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chronokg.cli.common import console
from chronokg.cli.render import say, table

if TYPE_CHECKING:
    from chronokg.ingest.cxr import CxrLoadSummary
    from chronokg.ingest.umls import UmlsLoadSummary
    from chronokg.ingest.wikidata import WikidataLoadSummary


def cxr(summary: CxrLoadSummary) -> None:
    say(console, f"{summary.patients} patients, {summary.studies} studies, {summary.observations} "
                 f"observations, {summary.questions} questions")
    if summary.unmatched_questions:
        say(console, (f"{summary.unmatched_questions} question(s) have images matching no loaded study", "yellow"))


def umls(summary: UmlsLoadSummary) -> None:
    rows = [[r.release, str(r.date), "already loaded: skipped", *[""] * 7] if r.skipped else
            [r.release, str(r.date), r.rows, r.kept_rows, r.relations, r.opened, r.continued, r.closed, r.concepts,
             r.named] for r in summary.releases]
    table(console, ["release", "date", "rows", "kept rows", "relations", "opened", "continued", "closed", "concepts",
                    "named"], rows, title="UMLS releases")


def wikidata(summary: WikidataLoadSummary) -> None:
    """Facts read, retractions, skipped statements by reason, and properties left out by --properties."""
    say(console, f"{summary.facts} statements read as facts; {summary.retracted} facts retracted by newer revisions")
    if summary.skipped:
        say(console, "skipped: " + ", ".join(f"{k} {v}" for k, v in summary.skipped.items()))
        for reason, ids in summary.skipped_statements.items():
            rest = summary.skipped.get(reason, len(ids)) - len(ids)
            say(console, f"  {reason}: {', '.join(ids)}" + (f" and {rest:,} more" if rest > 0 else ""))
    not_selected: dict[str, int] = getattr(summary, "not_selected", {})
    if not_selected:
        pids = list(not_selected)
        more = f" and {len(pids) - 8} more" if len(pids) > 8 else ""
        say(console, ("not loaded:", "bold yellow"), f" {len(pids)} properties outside --properties "
                     f"({', '.join(pids[:8])}{more}); include them with --properties all, or a list such as "
                      f"--properties {','.join(pids[:3])}")

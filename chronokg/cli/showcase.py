"""What `chronokg demo` shows: each catalog query on the demo corpus, explained."""

from __future__ import annotations

import datetime as dt

from rich.console import Console
from rich.panel import Panel

from chronokg.cli.render import Format, emit, load_summary
from chronokg.demo.corpus import load_demo
from chronokg.graph.store import GraphStore
from chronokg.queries import catalog


def run_showcase(store: GraphStore, console: Console) -> None:
    console.print(Panel.fit(f"chronokg demo — store {store.uri} ({store.engine})", style="bold"))
    load_summary(console, load_demo(store))

    def show(title: str, explain: str) -> None:
        console.rule(f"[bold]{title}")
        console.print(f"[dim]{explain}[/]")

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
    emit(console, catalog.changed_between(store, dt.date(2016, 1, 1), dt.date(2023, 1, 1)), Format.table, wrap=60)

    show("facts_as_of('un-secretary-general', valid 2018-01-01)",
         "Bitemporal: the same question, as known in mid-2016 (before the term ended) and as known now.")
    for known in (dt.date(2016, 6, 1), None):
        rows = catalog.facts_as_of(store, dt.date(2018, 1, 1), subject="un-secretary-general", known_at=known)
        emit(console, rows, Format.table, title=f"known at {known or 'now'}",
             columns=["object_caption", "valid_from", "valid_to", "known_from", "known_to"])

    show("stats()", "Counts per label and relationship type.")
    emit(console, [r for r in catalog.stats(store) if r.kind != "source"], Format.table,
         columns=["kind", "name", "count"])

"""The demo corpus's load table counts what it read (its records, from its one file) and what the store holds
after it."""

from __future__ import annotations

import io
import re

from rich.console import Console

from chronokg.cli.render import load_summary
from chronokg.demo.corpus import load_demo, read_corpus
from chronokg.graph.kglite_store import KgliteStore


def test_the_demo_load_table_says_what_was_read_and_written() -> None:
    store = KgliteStore(":memory:")
    summary = load_demo(store)
    out = io.StringIO()
    load_summary(Console(file=out, width=200), summary)
    text = out.getvalue()
    corpus = read_corpus()
    assert f"{len(corpus.decisions) + len(corpus.facts)} records from 1 file" in text
    held = {r["k"]: r["n"] for r in store.run("MATCH (n) RETURN labels(n)[0] AS k, count(*) AS n")}
    for label, n in held.items():  # each label's `after` is what the store holds
        row = next(line for line in text.splitlines() if re.search(rf"\b{label}\b", line))
        numbers = [int(x) for x in re.findall(r"(?<![\w-])\d+(?![\w-])", row)]
        assert numbers[2] == n, (label, row)


def test_the_later_release_supersedes_a_recommendation_and_its_table_shows_only_what_it_changed() -> None:
    import datetime as dt

    from chronokg.demo.corpus import load_later_release, read_later
    from chronokg.queries import catalog

    store = KgliteStore(":memory:")
    load_demo(store)
    before = {r["k"]: r["n"] for r in store.run("MATCH (n) RETURN labels(n)[0] AS k, count(*) AS n")}
    summary = load_later_release(store)
    later = read_later()
    decision, newer = later.versions[0].decision, later.versions[0].recommendation
    # as known now, the newer version is in force from its year; as the first release knew it, the older one
    now = catalog.facts_as_of(store, dt.date(2022, 6, 1), subject=decision)
    assert [f.value for f in now] == [newer]
    then = catalog.facts_as_of(store, dt.date(2022, 6, 1), subject=decision, known_at=dt.date(2026, 11, 15))
    assert len(then) == 1 and then[0].value != newer and then[0].valid_to is None
    out = io.StringIO()
    load_summary(Console(file=out, width=200), summary)
    text = out.getvalue()
    shown = {line.split()[0] for line in text.splitlines() if re.match(r"[A-Za-z_]+\s+\d", line)}
    assert shown == set(summary.staged)  # every row is something this release holds or changed
    assert before["Fact"] + 3 == summary.after["Fact"]  # the newer version, the ended older one, the superseded_by
    assert "1 facts retracted by this release" in text
    assert load_later_release(store).unchanged  # loading it again changes nothing

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

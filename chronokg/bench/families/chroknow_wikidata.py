"""ChroKnow General items built from Wikidata facts loaded with `chronokg ingest wikidata`, as the paper builds
ChroKnowBench's General domain: from the objects a (subject, relation) has in Wikidata over time.

ChroKnowledge (arXiv 2410.09870, §3 "ChroKnowBench"): General-domain rows are Wikidata (subject, relation)
pairs with their objects per year (from yearly dumps), dynamic when the object changes over the years, static
otherwise; the relations are the eight time-dependent properties whose names the seed's templates key
(`sources/template.py`, `prompt_QA_general_t`). Here the years come from the loaded statements' own time
qualifiers instead of dumps: each (subject, property) with at least one time bound is one item; it is asked
about in each year a bound falls in (a start's year; an end's year is the year of its last valid day),
where what holds changes; its objects that year are the facts valid at some time in it (the same
`facts-during` query that is its answer key). A newer revision that adds or changes a statement therefore
changes exactly the items (and years) of that statement.

Exemplars for these items: the General few-shot pool when one is loaded (the seed's), else the other
Wikidata items, each shown with its objects in its own latest year not after the asked one (else its first).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from chronokg.bench.families.chroknow_item import ORIGIN_WIKIDATA as ORIGIN
from chronokg.bench.families.chroknow_item import Item
from chronokg.queries.chroknow import WikidataFactRow

if TYPE_CHECKING:
    from chronokg.bench.family import Context

# The seed's General relation names (the keys of `prompt_QA_general_t`) for ChroKnowBench's Wikidata properties.
RELATIONS = {"P39": "position held", "P54": "member of sports team", "P108": "employer", "P463": "member of",
             "P69": "educated at", "P169": "chief executive officer", "P1037": "director / manager",
             "P1308": "officeholder"}


def _years(facts: list[WikidataFactRow]) -> list[int]:
    years = {f.valid_from.year for f in facts if f.valid_from is not None}
    years |= {(f.valid_to - dt.timedelta(days=1)).year for f in facts if f.valid_to is not None}
    return sorted(y for y in years if 1 <= y <= 9998)


def _object(f: WikidataFactRow) -> Any:
    """As a ChroKnowBench row holds an object: its alias list (label first), or the literal value."""
    if f.object is None:
        return f.value
    return list(dict.fromkeys([f.caption or f.object, *(f.aliases or [])]))


def wikidata_items(ctx: Context) -> list[Item]:
    """One General item per (subject, property) of the loaded Wikidata facts that has a time bound."""
    rows: list[WikidataFactRow] = ctx.rows("wikidata-facts", {})
    groups: dict[tuple[str, str], list[WikidataFactRow]] = {}
    for r in rows:
        groups.setdefault((r.subject, r.predicate), []).append(r)
    items = []
    for (subject, pid), facts in sorted(groups.items()):
        years = _years(facts)
        if not years:
            continue
        row: dict[str, Any] = {"subject": facts[0].subject_caption or subject,
                               "relation": RELATIONS.get(pid, pid)}
        windows: dict[str, tuple[dt.date, dt.date]] = {}
        for year in years:
            start, end = dt.date(year, 1, 1), dt.date(year + 1, 1, 1)
            held = [f for f in facts if (f.valid_from is None or f.valid_from < end)
                    and (f.valid_to is None or f.valid_to > start)]
            if held:
                row[f"objects_{year}"] = [_object(f) for f in held]
                row[f"release_date_{year}"] = str(year)
                windows[str(year)] = (start, end)
        answers = {str(v) for k, v in row.items() if k.startswith("objects_")}
        source = max((f.source_id or "" for f in facts), default="")
        items.append(Item(id=f"wd-{subject}-{pid}", domain="General", origin=ORIGIN, row=row, subject_id=subject,
                          predicate=pid, source_id=source, state="dynamic" if len(answers) > 1 else "static",
                          split="Dynamic" if len(answers) > 1 else "Static", windows=windows,
                          derived=f"Entity:{subject}"))
    return items

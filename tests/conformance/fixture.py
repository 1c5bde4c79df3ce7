"""The conformance fixture graph: small, hand-made, and covering every temporal corner.

Employment facts with a bitemporal correction, a literal-valued fact, a
two-hop path, a year-precision fact, and two guideline trajectories (one with a
same-year update). Order traps: two values of one predicate from the same day, written
in reverse order (ties break on the stated key, not on insertion), and a guideline
issued by two organizations, the alphabetically later one linked first.
"""

from __future__ import annotations

import datetime as dt

from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_batch
from chronokg.ingest.tempomed import GuidelineBuilder

D = dt.date
S1 = Source(id="conf:s1", kind="conf", caption="first release", version="1", release_date=D(2020, 1, 1))
S2 = Source(id="conf:s2", kind="conf", caption="second release", version="2", release_date=D(2022, 1, 1))


def fact(subject: str, predicate: str, obj: str | None = None, value: int | str | None = None, *,
         start: dt.date | None, end: dt.date | None = None, src: Source = S1, known_to: dt.date | None = None,
         precision: Precision = Precision.DAY) -> Fact:
    return Fact(subject=subject, predicate=predicate, object=obj, value=value, valid_from=start, valid_to=end,
                precision=precision, known_from=src.release_date, known_to=known_to, source_id=src.id,
                source_kind="conf")


FACTS = [
    fact("alice", "employer", "acme", start=D(2000, 1, 1), end=D(2010, 1, 1)),
    # Release 1 thought Alice was still at Globex; release 2 knows she left in mid-2021.
    fact("alice", "employer", "globex", start=D(2010, 1, 1), known_to=D(2022, 1, 1)),
    fact("alice", "employer", "globex", start=D(2010, 1, 1), end=D(2021, 6, 1), src=S2),
    fact("alice", "employer", "initech", start=D(2021, 6, 1), src=S2),
    fact("alice", "height_cm", value=170, start=D(2000, 1, 1)),
    fact("bob", "employer", "acme", start=D(2005, 1, 1), precision=Precision.YEAR),
    fact("acme", "headquarters", "paris", start=D(1990, 1, 1), end=D(2015, 1, 1)),
    fact("acme", "headquarters", "lyon", start=D(2015, 1, 1)),
    fact("globex", "headquarters", "berlin", start=None),
    # Two employers from the same day, the later name written first.
    fact("carol", "employer", "initech", start=D(2011, 1, 1)),
    fact("carol", "employer", "globex", start=D(2011, 1, 1)),
]
CAPTIONS = {"alice": "Alice", "bob": "Bob", "carol": "Carol", "acme": "Acme", "globex": "Globex", "initech": "Initech",
            "paris": "Paris", "lyon": "Lyon", "berlin": "Berlin"}

GUIDE = Source(id="conf:guidelines", kind="conf-guidelines", caption="guidelines", release_date=D(2023, 1, 1))


def build(store: GraphStore) -> None:
    batch = GraphBatch()
    for src in (S1, S2):
        batch.source(src)
    for f in FACTS:
        batch.fact(f)
    for eid, caption in CAPTIONS.items():
        batch.entity(eid, kind="conf", caption=caption)
    write_batch(store, batch)

    g = GuidelineBuilder(D(2023, 1, 1))
    g.batch.source(GUIDE)
    for gid, year in (("g2010", 2010), ("g2015", 2015), ("g2020", 2020), ("h2020a", 2020), ("h2020b", 2020)):
        orgs = ["Society of Hearts"] if gid.startswith("g") else ["Lung Union"]
        if gid == "g2015":
            orgs.append("Academy of Arteries")  # two issuers, the later name linked first
        g.guideline(gid, year, GUIDE, caption=f"Guideline {gid}", topic="hearts" if gid[0] == "g" else "lungs",
                    organizations=orgs)
    g.supersession("g2015", 2015, "g2010", GUIDE)
    g.supersession("g2020", 2020, "g2015", GUIDE)
    g.supersession("h2020b", 2020, "h2020a", GUIDE)
    g.batch.entity("dose", kind="clinical_decision", caption="dose")
    ids = [
        g.recommendation(decision="dose", guideline="g2010", text="dose 1", start=2010, end=2015, src=GUIDE),
        g.recommendation(decision="dose", guideline="g2015", text="dose 2", start=2015, end=2020, src=GUIDE),
        g.recommendation(decision="dose", guideline="g2020", text="dose 3", start=2020, end=None, src=GUIDE),
    ]
    g.change_pair(decision="dose", current="g2015", prior="g2010", current_fact=ids[1], prior_fact=ids[0],
                  summary="1 to 2", src=GUIDE, category="dose")
    g.change_pair(decision="dose", current="g2020", prior="g2015", current_fact=ids[2], prior_fact=ids[1],
                  summary="2 to 3", src=GUIDE, category="dose")
    g.change(decision="mask", caption="mask", current="h2020b", cur_year=2020, prior="h2020a", prior_year=2020,
             current_rec="mask B", prior_rec="mask A", summary="A to B", clinical_focus="masks", src=GUIDE)
    write_batch(store, g.batch)

"""The contract every engine passes, as a pytest mixin (haystack's DocumentStore test-mixin pattern).

Every catalog query against hand-checked answers on a small fixture graph that covers every temporal corner
(`build`), the guard on the engine's plans, and the engine's declarations: its scheme opens it
(`chronokg.graph.engines.ENGINES`) and what it lacks answers as `GraphStore`'s defaults say. Subclass the mixin once
per engine with a `graph` fixture that yields a store holding exactly `build`'s graph::

    class TestMyEngineConformance(EngineConformance):
        @pytest.fixture(scope="class")
        @classmethod
        def graph(cls) -> Iterator[GraphStore]:
            with MyStore(...) as store:
                build(store)
                yield store

The fixture graph: employment facts with a bitemporal correction, a literal-valued fact, a two-hop path, a
year-precision fact, and two guideline trajectories (one with a same-year update). Order traps: two values of one
predicate from the same day, written in reverse order (ties break on the stated key, not on insertion), and a
guideline issued by two organizations, the alphabetically later one linked first.
"""

from __future__ import annotations

import contextlib
import datetime as dt

import pytest

from chronokg.errors import QueryRefused
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.engines import ENGINES
from chronokg.graph.guard import OPAQUE_PLAN, ReadLimits, check_plan, guarded_read
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import Capabilities, GraphStore
from chronokg.graph.writer import write_batch
from chronokg.ingest.tempomed import GuidelineBuilder
from chronokg.queries import catalog
from chronokg.store_uri import StoreURI

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


class EngineConformance:
    """Mix into a test class that provides a `graph` fixture: a store of the engine holding exactly `build`'s graph."""

    # --- the engine's declarations -------------------------------------------------------------

    def test_the_engine_is_registered_under_its_uri_scheme(self, graph: GraphStore) -> None:
        scheme = StoreURI.parse(graph.uri).scheme
        engine: object = ENGINES.get(scheme)
        assert engine is type(graph), f"{scheme}:// should open {type(graph).__name__}"
        assert isinstance(type(graph).capabilities, Capabilities)
        assert type(graph).capabilities.read_operators, "the guard needs the engine's read operators"

    def test_absent_capabilities_answer_as_the_interface_says(self, graph: GraphStore) -> None:
        caps = graph.capabilities
        if not caps.notices:
            assert list(graph.notices) == []
        if not caps.interval_sidecar:
            assert graph.intervals() is None
        if caps.in_worker_reads or not caps.forked_reads:
            cypher, params = catalog.facts_as_of_cypher(D(2012, 1, 1), subject="alice")
            here = graph.run_here(cypher, params, ReadLimits())
            assert here.rows == graph.run_limited(cypher, params, ReadLimits()).rows == graph.run(cypher, params)

    def test_a_guarded_read_gives_the_plain_answer(self, graph: GraphStore) -> None:
        """`QuerySpec.run` with the tools' read strategy (guard, bounded read) answers as the CLI's plain run."""
        from chronokg.queries.spec import all_queries
        from chronokg.serve.reads import GuardedRead, GuardVerdicts

        spec = all_queries().get("as-of")
        params = {"date": D(2012, 1, 1), "subject": "alice"}
        plain = spec.run(graph, params)
        assert plain and spec.run(graph, params, read=GuardedRead(ReadLimits())) == plain
        assert spec.run(graph, params, read=GuardedRead(ReadLimits(), GuardVerdicts(), here=True)) == plain

    # --- facts_as_of -------------------------------------------------------------------------

    @pytest.mark.parametrize(("day", "expected"), [
        (D(1999, 12, 31), []),
        (D(2000, 1, 1), ["acme"]),
        (D(2009, 12, 31), ["acme"]),
        (D(2010, 1, 1), ["globex"]),
        (D(2021, 5, 31), ["globex"]),
        (D(2021, 6, 1), ["initech"]),
        (D(2030, 1, 1), ["initech"]),
    ])
    def test_facts_as_of_half_open_intervals(self, graph: GraphStore, day: dt.date, expected: list[str]) -> None:
        rows = catalog.facts_as_of(graph, day, subject="alice", predicate="employer")
        assert [r.object for r in rows] == expected

    @pytest.mark.parametrize(("known_at", "day", "expected"), [
        (D(2020, 6, 1), D(2023, 1, 1), ["globex"]),  # release 1 did not know she left
        (D(2022, 6, 1), D(2023, 1, 1), ["initech"]),
        (D(2019, 6, 1), D(2023, 1, 1), []),  # nothing was known yet
        (D(2021, 12, 31), D(2021, 7, 1), ["globex"]),
        (D(2022, 1, 1), D(2021, 7, 1), ["initech"]),
    ])
    def test_facts_as_of_known_at(self, graph: GraphStore, known_at: dt.date, day: dt.date,
                                  expected: list[str]) -> None:
        rows = catalog.facts_as_of(graph, day, subject="alice", predicate="employer", known_at=known_at)
        assert [r.object for r in rows] == expected

    def test_facts_as_of_all_predicates_with_captions_and_literals(self, graph: GraphStore) -> None:
        rows = catalog.facts_as_of(graph, D(2005, 6, 1), subject="alice")
        assert [(r.predicate, r.object, r.object_caption, r.value) for r in rows] == [
            ("employer", "acme", "Acme", None),
            ("height_cm", None, None, 170),
        ]
        assert rows[0].subject_caption == "Alice"
        assert rows[0].valid_from == D(2000, 1, 1) and rows[0].valid_to == D(2010, 1, 1)

    def test_facts_as_of_by_predicate_across_subjects(self, graph: GraphStore) -> None:
        rows = catalog.facts_as_of(graph, D(2012, 1, 1), predicate="headquarters")
        assert [(r.subject, r.object) for r in rows] == [("acme", "paris"), ("globex", "berlin")]

    def test_ties_break_on_the_stated_key(self, graph: GraphStore) -> None:
        """Two values from the same day, written in reverse order: ordered by (subject, predicate, valid_from, id)."""
        rows = catalog.facts_as_of(graph, D(2012, 1, 1), subject="carol")
        assert sorted(str(r.object) for r in rows) == ["globex", "initech"]
        assert [r.id for r in rows] == sorted(r.id for r in rows)
        history = catalog.timeline(graph, "carol")
        assert [r.id for r in history] == sorted(r.id for r in history)

    def test_open_start_is_valid_any_time(self, graph: GraphStore) -> None:
        rows = catalog.facts_as_of(graph, D(1800, 1, 1), subject="globex")
        assert [r.object for r in rows] == ["berlin"]

    def test_year_precision_is_kept(self, graph: GraphStore) -> None:
        (row,) = catalog.facts_as_of(graph, D(2005, 1, 1), subject="bob")
        assert row.precision == "year"

    def test_limit(self, graph: GraphStore) -> None:
        assert len(catalog.facts_as_of(graph, D(2012, 1, 1), predicate="headquarters", limit=1)) == 1

    # --- latest ------------------------------------------------------------------------------

    def test_latest_is_what_is_valid_on_the_day_known_now(self, graph: GraphStore) -> None:
        from chronokg.queries.spec import run_query

        rows = run_query(graph, "latest", {"subject": "alice", "date": D(2023, 1, 1)})
        assert [(r.predicate, r.object, r.value, r.current) for r in rows] == [
            ("employer", "initech", None, True), ("height_cm", None, 170, True)]
        rows = run_query(graph, "latest", {"subject": "alice", "predicate": "employer", "date": D(2015, 6, 1)})
        assert [(r.object, r.valid_to, r.current) for r in rows] == [("globex", D(2021, 6, 1), True)]
        assert run_query(graph, "latest", {"subject": "alice", "predicate": "employer", "date": D(1999, 1, 1)}) == []
        rows = run_query(graph, "latest", {"subject": "acme", "predicate": "headquarters", "date": D(2014, 1, 1)})
        assert [(r.object_caption, r.current) for r in rows] == [("Paris", True)]

    # --- timeline ----------------------------------------------------------------------------

    def test_timeline_orders_versions(self, graph: GraphStore) -> None:
        rows = catalog.timeline(graph, "alice", "employer")
        assert [(r.object, r.valid_from, r.valid_to) for r in rows] == [
            ("acme", D(2000, 1, 1), D(2010, 1, 1)),
            ("globex", D(2010, 1, 1), D(2021, 6, 1)),
            ("initech", D(2021, 6, 1), None),
        ]

    def test_timeline_with_retracted_and_known_at(self, graph: GraphStore) -> None:
        rows = catalog.timeline(graph, "alice", "employer", include_retracted=True)
        assert [(r.object, r.valid_to, r.known_to) for r in rows] == [
            ("acme", D(2010, 1, 1), None),
            ("globex", D(2021, 6, 1), None),
            ("globex", None, D(2022, 1, 1)),
            ("initech", None, None),
        ]
        as_known = catalog.timeline(graph, "alice", "employer", known_at=D(2021, 1, 1))
        assert [(r.object, r.valid_to) for r in as_known] == [("acme", D(2010, 1, 1)), ("globex", None)]

    # --- changed_between -----------------------------------------------------------------------

    def test_changed_between(self, graph: GraphStore) -> None:
        rows = catalog.changed_between(graph, D(2012, 1, 1), D(2022, 1, 1))
        assert [(r.subject, r.predicate, r.before, r.after) for r in rows] == [
            ("acme", "headquarters", ["paris"], ["lyon"]),
            ("alice", "employer", ["globex"], ["initech"]),
            ("dose", "recommendation", ["dose 1"], ["dose 3"]),
            ("g2010", "superseded_by", [], ["g2015"]),
            ("g2015", "superseded_by", [], ["g2020"]),
            ("h2020a", "superseded_by", [], ["h2020b"]),
            ("mask", "recommendation", [], ["mask B"]),
        ]

    def test_changed_between_filters_and_swapped_dates(self, graph: GraphStore) -> None:
        rows = catalog.changed_between(graph, D(2022, 1, 1), D(2001, 1, 1), predicate="employer")
        assert [(r.subject, r.before, r.after) for r in rows] == [
            ("alice", ["acme"], ["initech"]),
            ("bob", [], ["acme"]),
            ("carol", [], ["globex", "initech"]),  # values sorted
        ]
        assert catalog.changed_between(graph, D(2016, 1, 1), D(2017, 1, 1)) == []

    # --- two hops ------------------------------------------------------------------------------

    @pytest.mark.parametrize(("day", "expected"), [
        (D(2005, 1, 1), [("acme", "paris")]),
        (D(2012, 1, 1), [("globex", "berlin")]),
        (D(2023, 1, 1), []),
    ])
    def test_two_hop_as_of(self, graph: GraphStore, day: dt.date, expected: list[tuple[str, str]]) -> None:
        rows = catalog.two_hop_as_of(graph, "alice", day, predicate="employer", predicate2="headquarters")
        assert [(r.middle, r.target) for r in rows] == expected

    # --- guidelines ----------------------------------------------------------------------------

    @pytest.mark.parametrize(("day", "expected"), [
        (D(2009, 12, 31), []),
        (D(2010, 1, 1), [("g2010", "dose 1")]),
        (D(2017, 6, 1), [("g2015", "dose 2")]),
        (D(2020, 1, 1), [("g2020", "dose 3")]),
    ])
    def test_recommended_on_by_any_version(self, graph: GraphStore, day: dt.date,
                                           expected: list[tuple[str, str]]) -> None:
        for version in ("g2010", "g2015", "g2020"):
            rows = catalog.recommended_on(graph, day, guideline=version)
            assert [(r.guideline, r.recommendation) for r in rows] == expected

    def test_recommended_on_by_topic_and_organization(self, graph: GraphStore) -> None:
        by_topic = catalog.recommended_on(graph, D(2016, 1, 1), topic="HEART")
        by_org = catalog.recommended_on(graph, D(2016, 1, 1), organization="society of hearts")
        assert [r.recommendation for r in by_topic] == [r.recommendation for r in by_org] == ["dose 2"]
        assert by_org[0].organization == "Academy of Arteries"  # g2015 has two issuers: the first by name
        assert catalog.recommended_on(graph, D(2012, 1, 1), organization="hearts")[0].organization == \
            "Society of Hearts"
        everything = catalog.recommended_on(graph, D(2021, 1, 1))
        assert [(r.decision_id, r.recommendation) for r in everything] == [("dose", "dose 3"), ("mask", "mask B")]

    def test_same_year_update_answers_with_the_later_version(self, graph: GraphStore) -> None:
        rows = catalog.recommended_on(graph, D(2020, 3, 1), guideline="h2020a")
        assert [(r.guideline, r.recommendation) for r in rows] == [("h2020b", "mask B")]
        history = catalog.timeline(graph, "mask")
        assert [r.value for r in history] == ["mask A", "mask B"]

    def test_trajectory_orders_versions_and_same_year_by_supersession(self, graph: GraphStore) -> None:
        rows = catalog.trajectory(graph, "g2015")
        assert [(r.pmid, r.year, r.supersedes, r.superseded_by) for r in rows] == [
            ("g2010", 2010, [], ["g2015"]),
            ("g2015", 2015, ["g2010"], ["g2020"]),
            ("g2020", 2020, ["g2015"], []),
        ]
        assert rows[0].organizations == ["Society of Hearts"]
        assert rows[1].organizations == ["Academy of Arteries", "Society of Hearts"]  # sorted by name
        same_year = catalog.trajectory(graph, "h2020b")
        assert [r.pmid for r in same_year] == ["h2020a", "h2020b"]

    def test_change_pairs(self, graph: GraphStore) -> None:
        rows = catalog.change_pairs(graph, "g2020")
        assert [(r.prior_pmid, r.current_pmid, r.prior_recommendation, r.current_recommendation, r.summary)
                for r in rows] == [
            ("g2010", "g2015", "dose 1", "dose 2", "1 to 2"),
            ("g2015", "g2020", "dose 2", "dose 3", "2 to 3"),
        ]

    def test_unknown_ids_give_empty_results(self, graph: GraphStore) -> None:
        assert catalog.trajectory(graph, "nope") == []
        assert catalog.recommended_on(graph, D(2020, 1, 1), guideline="nope") == []
        assert catalog.timeline(graph, "nope") == []

    # --- stats ---------------------------------------------------------------------------------

    def test_stats(self, graph: GraphStore) -> None:
        rows = catalog.stats(graph)
        labels = {r.name: r.count for r in rows if r.kind == "label"}
        # 11 conf facts + 3 dose + 2 mask recommendations + 3 superseded_by facts
        assert labels["Fact"] == 19
        assert labels["Guideline"] == 5
        assert labels["ChangePair"] == 3
        rels = {r.name: r.count for r in rows if r.kind == "relationship"}
        assert rels["SUPERSEDES"] == 3
        assert rels["SUBJECT"] == labels["Fact"]
        per_source = {r.name: r.count for r in rows if r.kind == "source"}
        assert per_source == {"conf:s1": 9, "conf:s2": 2, "conf:guidelines": 8}

    # --- read-only guard ---------------------------------------------------------------------

    def test_catalog_queries_are_read_only_and_writes_are_refused(self, graph: GraphStore) -> None:
        cypher, params = catalog.facts_as_of_cypher(D(2020, 1, 1), subject="alice")
        allowed = graph.capabilities.read_operators
        check_plan(graph.explain(cypher, params), allowed)  # the catalog's own Cypher passes the guard
        before = catalog.stats(graph)
        for write in ("MATCH (f:Fact) SET f.valid_to = date('2000-01-01')", "CREATE (:Entity {id: 'x'})",
                      "MATCH (n) DETACH DELETE n", "MERGE (e:Entity {id: 'y'})"):
            plan = graph.explain(write)
            if plan != [OPAQUE_PLAN]:  # an engine whose plan can be checked must show the write
                with pytest.raises(QueryRefused, match=r"\[plan check\]"):
                    check_plan(plan, allowed)
            with pytest.raises(QueryRefused, match=r"\[text check\]"):
                guarded_read(graph, write)
            # The last layer alone (a write that got past the others): refused, or run and rolled back.
            with contextlib.suppress(QueryRefused):
                graph.run_limited(write, None, ReadLimits())
        assert catalog.stats(graph) == before
        assert graph.run("MATCH (e:Entity) WHERE e.id IN ['x', 'y'] RETURN e.id AS id") == []
        result = guarded_read(graph, "MATCH (e:Entity {id: $id}) RETURN e.caption AS c", {"id": "alice"})
        assert result.rows == [{"c": "Alice"}] and not result.truncated

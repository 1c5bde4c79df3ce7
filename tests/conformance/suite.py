"""Backend conformance suite: every catalog query against hand-checked answers on the fixture graph.

Subclass `CatalogConformance` and provide a `graph` fixture that yields a store
holding exactly the fixture graph (the haystack DocumentStore test-mixin pattern).
"""

from __future__ import annotations

import contextlib
import datetime as dt

import pytest

from chronokg.errors import QueryRefused
from chronokg.graph.guard import OPAQUE_PLAN, ReadLimits, check_plan, guarded_read
from chronokg.graph.store import GraphStore
from chronokg.queries import catalog

D = dt.date


class CatalogConformance:
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
        assert sorted(r.object for r in rows) == ["globex", "initech"]
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
        check_plan(graph.explain(cypher, params), graph.engine)  # the catalog's own Cypher passes the guard
        before = catalog.stats(graph)
        for write in ("MATCH (f:Fact) SET f.valid_to = date('2000-01-01')", "CREATE (:Entity {id: 'x'})",
                      "MATCH (n) DETACH DELETE n", "MERGE (e:Entity {id: 'y'})"):
            plan = graph.explain(write)
            if plan != [OPAQUE_PLAN]:  # an engine whose plan can be checked must show the write
                with pytest.raises(QueryRefused, match=r"\[plan check\]"):
                    check_plan(plan, graph.engine)
            with pytest.raises(QueryRefused, match=r"\[text check\]"):
                guarded_read(graph, write)
            # The last layer alone (a write that got past the others): refused, or run and rolled back.
            with contextlib.suppress(QueryRefused):
                graph.run_limited(write, None, ReadLimits())
        assert catalog.stats(graph) == before
        assert graph.run("MATCH (e:Entity) WHERE e.id IN ['x', 'y'] RETURN e.id AS id") == []
        result = guarded_read(graph, "MATCH (e:Entity {id: $id}) RETURN e.caption AS c", {"id": "alice"})
        assert result.rows == [{"c": "Alice"}] and not result.truncated

"""Names are bitemporal like facts: `query as-of --known-at K` shows the caption the store knew at K.

The UMLS release pair of the probe: 2021AA renames C0011860 from "Diabetes Mellitus, Non-Insulin-Dependent" to
"Type 2 diabetes mellitus"; asked as known in 2020, the store answered with the 2021 name. Without a known
time the answer is unchanged (the latest name). Wikidata labels and CFR captions are versioned the same way.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path

from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.merge import versions
from chronokg.ingest import cfr, umls, wikidata
from chronokg.queries import catalog
from tests.test_umls import T2DM, fact_state, folders
from tests.test_wikidata import raw, write_entity

OLD, NEW = "Diabetes Mellitus, Non-Insulin-Dependent", "Type 2 diabetes mellitus"


def captions_of(rows: list[catalog.FactRow], cui: str) -> set[str | None]:
    return ({r.subject_caption for r in rows if r.subject == cui} | {r.object_caption for r in rows if r.object == cui})


def test_umls_as_of_known_at_shows_the_name_known_then(tmp_path: Path) -> None:
    path = tmp_path / "s.kgl"
    with KgliteStore(path) as store:
        umls.load(store, folders())
        then = catalog.facts_as_of(store, dt.date(2020, 6, 1), known_at=dt.date(2020, 6, 1))
        later = catalog.facts_as_of(store, dt.date(2020, 6, 1), known_at=dt.date(2021, 6, 1))
        now = catalog.facts_as_of(store, dt.date(2020, 6, 1))
        history = catalog.timeline(store, T2DM, known_at=dt.date(2020, 12, 31))
    assert captions_of(then, T2DM) == {OLD}
    assert captions_of(later, T2DM) == {NEW} and captions_of(now, T2DM) == {NEW}
    assert {r.subject_caption for r in history} == {OLD}
    result = CliRunner().invoke(app, ["--store", f"kglite://{path}", "query", "as-of", "--date", "2020-06-01",
                                      "--known-at", "2020-06-01", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = [r for r in json.loads(result.stdout) if T2DM in (r["subject"], r["object"])]
    assert rows and all(OLD in (r["subject_caption"], r["object_caption"]) for r in rows)


def test_release_by_release_loads_keep_the_same_name_history() -> None:
    one, split = KgliteStore(":memory:"), KgliteStore(":memory:")
    umls.load(one, folders())
    for name in ("2020AA", "2021AA", "2022AA"):
        umls.load(split, folders(names=(name,)))
    assert fact_state(one) == fact_state(split)
    row = one.run("MATCH (e:Entity {id: $id}) RETURN e.caption_versions AS v", {"id": T2DM})[0]
    assert row["v"] == [f"2020-05-01\t{OLD}", f"2021-05-01\t{NEW}"]  # 2022AA repeats the 2021 name: no entry


def test_versions_merge_in_date_order_whatever_the_order_loaded() -> None:
    a, b, c = "2020-01-01\tA", "2021-01-01\tB", "2022-01-01\tB"
    assert versions([c, b], [a]) == versions([a], [b], [c]) == [a, b]
    assert versions([a], "not a list") is None


def test_wikidata_label_known_at_a_revision(shared_data: Path, tmp_path: Path) -> None:
    entity = raw(shared_data / "wikidata-entities" / "Q646148.json")
    older = copy.deepcopy(entity)
    older["labels"]["en"]["value"] = "An older label"
    older["lastrevid"] = entity["lastrevid"] - 1000
    older["modified"] = "2015-01-01T00:00:00Z"
    store = KgliteStore(":memory:")
    wikidata.load(store, [write_entity(tmp_path / "old.json", older)])
    wikidata.load(store, [write_entity(tmp_path / "new.json", entity)])
    label = entity["labels"]["en"]["value"]
    then = catalog.timeline(store, "Q646148", known_at=dt.date(2016, 1, 1))
    now = catalog.timeline(store, "Q646148")
    assert then and {r.subject_caption for r in then} == {"An older label"}
    assert now and {r.subject_caption for r in now} == {label}


def test_cfr_section_caption_known_at_an_edition(tmp_path: Path) -> None:
    from tests.test_cfr import ANNUAL

    first = tmp_path / "CFR-2024-title7-vol1.xml"
    first.write_text(ANNUAL, encoding="utf-8")
    second = tmp_path / "CFR-2025-title7-vol1.xml"
    second.write_text(ANNUAL.replace("Revised as of January 1, 2024", "Revised as of January 1, 2025")
                      .replace("§ 10.1</SECTNO><SUBJECT>Purpose.", "§ 10.1</SECTNO><SUBJECT>Purpose and scope."),
                      encoding="utf-8")
    store = KgliteStore(":memory:")
    cfr.load(store, [first, second])
    then = catalog.timeline(store, "cfr:7:10.1", known_at=dt.date(2024, 6, 1))
    now = catalog.timeline(store, "cfr:7:10.1")
    assert then and {r.subject_caption for r in then} == {"§ 10.1 Purpose"}
    assert now and {r.subject_caption for r in now} == {"§ 10.1 Purpose and scope"}


def test_a_name_first_given_by_a_later_release_is_unknown_before_it(tmp_path: Path) -> None:
    """A concept 2020AA holds in a relation but names in no MRCONSO row, named by 2021AA: known at 2020 it has
    no name (as the 2020 store had), known at 2021 and now the 2021 name."""
    with KgliteStore(tmp_path / "s.kgl") as store:
        umls.load(store, folders())
        late = {r["id"]: r["v"][0].split("\t", 1)[1] for r in store.run(
            "MATCH (e:Entity) WHERE e.caption_versions IS NOT NULL RETURN e.id AS id, e.caption_versions AS v")
            if r["v"][0] > "2021-05-01"}
        then = catalog.facts_as_of(store, dt.date(2020, 6, 1), known_at=dt.date(2020, 6, 1))
        later = catalog.facts_as_of(store, dt.date(2020, 6, 1), known_at=dt.date(2021, 6, 1))
        unnamed_then = [cui for cui in late if captions_of(then, cui)]
        assert unnamed_then, "the fixture has a concept named only from 2021AA on that a 2020 fact holds"
        for cui in unnamed_then:
            assert captions_of(then, cui) == {None}
            assert captions_of(later, cui) == {late[cui]}
            assert {r.subject_caption for r in catalog.timeline(store, cui, known_at=dt.date(2020, 6, 1))
                    if r.subject == cui} <= {None}

"""`releases drop` puts back the "latest wins" values a newer release replaced (`graph.prior`): a Wikidata
revision that restates a statement with another rank, a CFR edition that moves a section and a part to other
nodes and rewords paragraphs (real files of ../shared/data). The store's content hash after the drop is the hash
before the newer release was loaded."""

from __future__ import annotations

import json
from pathlib import Path

from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.prior import PRIOR
from tests.test_cfr import make_edition2, sample
from tests.test_lifecycle import digest, step
from tests.test_loop import newer_wikidata_revision


def newest(store: Path) -> str:
    with KgliteStore(store, read_only=True) as reader:
        return str(reader.run("MATCH (s:Source) RETURN s.id AS id ORDER BY s.release_date DESC, id DESC "
                              "LIMIT 1")[0]["id"])


def revise(src: Path, dst: Path, rank: str) -> None:
    """A newer revision of Q646148 (`newer_wikidata_revision`), which also restates the first "position held"
    statement with another rank (a fact attribute: latest wins)."""
    newer_wikidata_revision(src, dst)
    entity = json.loads(dst.read_text())
    body = entity["entities"]["Q646148"] if "entities" in entity else entity
    body["claims"]["P39"][0]["rank"] = rank
    dst.write_text(json.dumps(entity))


def test_dropping_a_newer_wikidata_revision_restores_the_values_it_replaced(shared_data: Path,
                                                                           tmp_path: Path) -> None:
    original = shared_data / "wikidata-entities" / "Q646148.json"
    revision = tmp_path / "Q646148.json"
    revise(original, revision, "preferred")
    store = tmp_path / "s.kgl"
    step(store, "ingest", "wikidata", str(original), "--properties", "timed")
    before = digest(store)
    with KgliteStore(store, read_only=True) as reader:
        ranks = reader.run("MATCH (f:Fact {subject_id: 'Q646148'}) WHERE f.rank IS NOT NULL "
                           "RETURN f.id AS id, f.rank AS rank ORDER BY id")
    step(store, "ingest", "wikidata", str(revision), "--properties", "timed")
    with KgliteStore(store, read_only=True) as reader:
        after = {r["id"]: r["rank"] for r in reader.run("MATCH (f:Fact {subject_id: 'Q646148'}) "
                                                          "RETURN f.id AS id, f.rank AS rank")}
        recorded = reader.run(f"MATCH (n) WHERE n.{PRIOR} IS NOT NULL RETURN count(n) AS n")[0]["n"]
    assert {r["rank"] for r in ranks} == {"normal"} and "preferred" in {after[r["id"]] for r in ranks} and recorded
    out = step(store, "releases", "drop", newest(store))
    assert "restored" in out and "latest wins" in out
    assert digest(store) == before  # the rank restored, no prior_values left: as before the revision


def test_dropping_a_newer_cfr_edition_restores_nodes_parts_and_positions(shared_data: Path, tmp_path: Path) -> None:
    ed1 = sample(shared_data)
    ed2 = tmp_path / "ECFR-title1.ed2.xml"
    make_edition2(ed1, ed2)
    raw = ed2.read_text(encoding="utf-8")  # the new edition also renumbers § 2.1's node and part 2's
    for old, new in (('NODE="1:1.0.1.1.2.0.1.1"', 'NODE="1:1.0.1.1.2.0.1.9"'),
                     ('NODE="1:1.0.1.1.2" TYPE="PART"', 'NODE="1:1.0.1.1.9" TYPE="PART"')):
        assert raw.count(old) == 1, old
        raw = raw.replace(old, new)
    ed2.write_text(raw, encoding="utf-8")
    store = tmp_path / "s.kgl"
    step(store, "ingest", "cfr", str(ed1))
    before = digest(store)
    step(store, "ingest", "cfr", str(ed2))
    with KgliteStore(store, read_only=True) as reader:
        nodes = {r["id"]: r["node"] for r in reader.run("MATCH (e:Entity) WHERE e.id IN ['cfr:1:2.1', "
                                                         "'cfr:1:part-2'] RETURN e.id AS id, e.cfr_node AS node")}
    assert nodes == {"cfr:1:2.1": "1:1.0.1.1.2.0.1.9", "cfr:1:part-2": "1:1.0.1.1.9"}
    out = step(store, "releases", "drop", newest(store))
    assert "latest wins" in out
    assert digest(store) == before


def test_dropping_a_newer_chroknow_file_restores_the_rows_as_read_before(tmp_path: Path) -> None:
    """A newer ChroKnowBench file restates a row with one more year: the row's `row_json` and `years` are the
    newer file's (latest wins) until that release is dropped."""
    fixture = Path(__file__).parent / "fixtures" / "chroknow" / "bench" / "TimeVariant_General_Static.jsonl"
    rows = [json.loads(line) for line in fixture.read_text(encoding="utf-8").splitlines() if line.strip()]
    first = rows[0]
    last = max(int(k[8:]) for k in first if k.startswith("objects_"))
    first[f"objects_{last + 1}"] = first[f"objects_{last}"]
    first[f"release_date_{last + 1}"] = f"{last + 1}-12-30"
    newer = tmp_path / "newer" / fixture.name
    newer.parent.mkdir()
    newer.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = tmp_path / "s.kgl"
    step(store, "ingest", "chroknow", str(fixture), "--release-date", "2024-01-01")
    before = digest(store)
    step(store, "ingest", "chroknow", str(newer), "--release-date", "2025-01-01")
    with KgliteStore(store, read_only=True) as reader:
        assert any(f"objects_{last + 1}" in str(r["j"]) for r in reader.run(
            "MATCH (q:SourceQuestion) RETURN q.row_json AS j"))
    out = step(store, "releases", "drop", newest(store))
    assert "latest wins" in out
    assert digest(store) == before

"""Clean-up of what a store holds: list and delete runs and generated benchmarks, drop a source release.

Each removal is planned by reading, then written as one transaction (all or nothing: a killed or failed step
leaves the store as it was), and returns what it removed. Dropping a release removes exactly what only that
release asserted: the facts and loaded nodes whose every provenance edge (`ASSERTED_IN`, `LOADED_FROM`) points
to it, the nodes left with nothing but those (entities of removed facts, the source questions of removed change
pairs, ...), and its `Source` node. Facts other releases assert too stay, their known time recomputed from the
remaining releases; values it replaced on nodes that stay ("latest wins", union lists) are put back from what the
load recorded (`graph.prior`). That undo is the fallback: `chronokg.ingest.replay` drops exactly, by replaying the
source's other releases and handing the difference here as a `Rebuild`. Derived things (questions testing or
built from removed nodes, snapshots that include the release, predictions on removed questions, runs left empty)
are refused unless `derived=True`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel, Field

from chronokg.errors import ChronoKGError
from chronokg.graph import prior, schema
from chronokg.graph.batch import CAPTION_VERSIONS, split_origin
from chronokg.graph.merge import versions
from chronokg.graph.store import GraphStore, Statement

PROVENANCE = (schema.ASSERTED_IN, schema.LOADED_FROM)
DERIVED = (schema.QUESTION, schema.PREDICTION, schema.RUN, schema.SNAPSHOT)  # made by chronokg, not loaded


class Removal(BaseModel):
    """What a removal took out (counts per label), and what it changed in place."""

    what: str
    removed: dict[str, int] = Field(default_factory=dict)
    updated: dict[str, int] = Field(default_factory=dict)
    restored: dict[str, int] = Field(default_factory=dict)  # "label key": values rolled back to an older release's
    kept: list[str] = Field(default_factory=list)  # "label id key": values it changed that could not be restored
    note: str | None = None  # how it was done, when not the usual way (a release undone in place, not replayed)

    def lines(self) -> list[str]:
        out = [f"{self.what}: removed " + (", ".join(f"{n:,} {label}" for label, n in sorted(self.removed.items()))
                                           or "nothing")]
        if self.updated:
            out.append("  kept, known time recomputed from the other releases: "
                       + ", ".join(f"{n:,} {label}" for label, n in sorted(self.updated.items())))
        if self.restored:
            out.append("  kept, value restored to the older release's (latest wins): "
                       + ", ".join(f"{n:,} {what}" for what, n in sorted(self.restored.items())))
        if self.kept:
            out.append(f"  kept as they are (a later release changed them again; --force): {len(self.kept):,} "
                       f"values: {', '.join(self.kept[:5])}" + (" …" if len(self.kept) > 5 else ""))
        if self.note:
            out.append(f"  {self.note}")
        return out


Ref = tuple[str, str]  # (label, id)
Edge = tuple[str, Ref, Ref, str]  # (type, start, end, its properties as JSON)


@dataclass
class Rebuild:
    """A source's part of the store made equal to a replay of its remaining releases (`chronokg.ingest.replay`):
    `scope` (label -> ids) is what the source's releases alone hold; nodes to delete, create and rewrite (a
    rewrite sets absent keys to null), edges whose (type, start, end) changes (all of them go, `edges_in` come
    back), and the remaining Sources' recorded calls renumbered."""

    scope: dict[str, set[str]]
    delete: set[Ref]
    create: dict[Ref, dict[str, Any]]
    rewrite: dict[Ref, dict[str, Any]]
    edges_out: list[tuple[str, Ref, Ref]]
    edges_in: list[Edge]
    changed: dict[str, int] = field(default_factory=dict)  # "label key": values rewritten
    calls: list[Statement] = field(default_factory=list)

    def removed(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for label, node_id in self.delete:
            out.setdefault(label, set()).add(node_id)
        return out

    def statements(self, store: GraphStore, removal: Removal) -> list[Statement]:
        """Edges out, nodes deleted, created and rewritten, edges in: in that order, inside the drop's one
        transaction."""
        out: list[Statement] = []
        for (kind, la, lb), rows in sorted(_group(
                ((t, a[0], b[0]), {"a": a[1], "b": b[1]}) for t, a, b in self.edges_out).items()):
            out.append((f"UNWIND $rows AS r MATCH (a:{la} {{id: r.a}})-[e:{kind}]->(b:{lb} {{id: r.b}}) DELETE e",
                        {"rows": rows}))
        out += [_delete(label, ids) for label, ids in sorted(self.removed().items())]
        removal.restored.update(self.changed)
        for what, nodes, verb in (("created", self.create, "CREATE"), ("rewritten", self.rewrite, "MATCH")):
            for label, rows in sorted(_group(((ref[0],), {"id": ref[1], "props": {k: v for k, v in props.items()
                                                                                  if k != "id"}})
                                             for ref, props in sorted(nodes.items())).items()):
                store.declare_properties(label[0], sorted({k for r in rows for k in r["props"]}))
                out.append((f"UNWIND $rows AS r {verb} (n:{label[0]} {{id: r.id}}) SET n += r.props",
                            {"rows": rows}))
                if what == "created":
                    key = f"{label[0]} (as the other releases give it)"
                    removal.restored[key] = removal.restored.get(key, 0) + len(rows)
        for (kind, la, lb), rows in sorted(_group(
                ((t, a[0], b[0]), {"a": a[1], "b": b[1], "p": json.loads(p)}) for t, a, b, p in self.edges_in
        ).items()):
            props = " SET e += r.p" if any(r["p"] for r in rows) else ""
            out.append((f"UNWIND $rows AS r MATCH (a:{la} {{id: r.a}}) MATCH (b:{lb} {{id: r.b}}) "
                        f"CREATE (a)-[e:{kind}]->(b){props}", {"rows": rows}))
        return out


def _group(items: Iterable[tuple[tuple[str, ...], dict[str, Any]]]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    out: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for key, row in items:
        out.setdefault(key, []).append(row)
    return out


def _delete(label: str, ids: Iterable[str]) -> Statement:
    return f"UNWIND $ids AS i MATCH (n:{label} {{id: i}}) DETACH DELETE n", {"ids": sorted(ids)}


def _commit(store: GraphStore, statements: list[Statement]) -> None:
    if statements:
        store.write(iter(statements))


# --- runs -----------------------------------------------------------------------------------------------------

def list_runs(store: GraphStore) -> list[dict[str, Any]]:
    return store.run("MATCH (r:Run) OPTIONAL MATCH (p:Prediction)-[:IN_RUN]->(r) "
                     "RETURN r.id AS id, r.models AS models, r.protocol AS protocol, r.snapshot AS snapshot, "
                     "r.started AS started, count(p) AS predictions ORDER BY id")


def delete_run(store: GraphStore, run_id: str) -> Removal:
    """The run, its predictions, and what writing it stored that nothing else holds: questions of a file never
    stored by `generate` (at a snapshot never recorded) that no other run answers, and such snapshots left
    without a question. Questions of a stored benchmark stay: they belong to it."""
    if not store.run("MATCH (r:Run {id: $id}) RETURN r.id AS id", {"id": run_id}):
        known = [r["id"] for r in list_runs(store)]
        raise ChronoKGError(f"no run {run_id!r} in the store (held: {', '.join(known) or 'none'})")
    preds = _predictions(store, [], [run_id])
    recorded = {r["id"] for r in store.run("MATCH (s:Snapshot) WHERE s.taken_at IS NOT NULL RETURN s.id AS id")}
    questions = {r["id"] for r in store.run(
        "MATCH (:Run {id: $id})<-[:IN_RUN]-(:Prediction)-[:ANSWERS]->(q:Question) "
        "OPTIONAL MATCH (q)-[:GENERATED_AT]->(s:Snapshot) RETURN q.id AS id, collect(s.id) AS snaps",
        {"id": run_id}) if not set(r["snaps"]) & recorded}
    answered = {r["id"] for r in store.run(  # by another run
        "UNWIND $ids AS i MATCH (q:Question {id: i})<-[:ANSWERS]-(p:Prediction) WHERE NOT p.id IN $preds "
        "RETURN DISTINCT q.id AS id", {"ids": sorted(questions), "preds": sorted(preds)})}
    questions -= answered
    snapshots = _orphaned(store, {r["id"] for r in store.run(
        "UNWIND $ids AS i MATCH (:Question {id: i})-[:GENERATED_AT]->(s:Snapshot) RETURN DISTINCT s.id AS id",
        {"ids": sorted(questions)})}, questions, {run_id})
    _commit(store, [_delete(schema.PREDICTION, preds), _delete(schema.RUN, [run_id]),
                    _delete(schema.QUESTION, questions), _delete(schema.SNAPSHOT, snapshots)])
    removed = {schema.PREDICTION: len(preds), schema.RUN: 1, schema.QUESTION: len(questions),
               schema.SNAPSHOT: len(snapshots)}
    return Removal(what=f"run {run_id}", removed={k: v for k, v in removed.items() if v})


def _orphaned(store: GraphStore, snapshots: set[str], questions: set[str], runs: set[str]) -> set[str]:
    """Of `snapshots`, those no question outside `questions` was generated at and no run outside `runs` was
    evaluated against: nothing would refer to them once those go."""
    out = set()
    for sid in snapshots:
        others = store.run("MATCH (q:Question)-[:GENERATED_AT]->(:Snapshot {id: $s}) WHERE NOT q.id IN $ids "
                           "RETURN count(q) AS n", {"s": sid, "ids": sorted(questions)})[0]["n"]
        users = store.run("MATCH (r:Run {snapshot: $s}) WHERE NOT r.id IN $runs RETURN count(r) AS n",
                          {"s": sid, "runs": sorted(runs)})[0]["n"]
        if not others and not users:
            out.add(sid)
    return out


# --- generated benchmarks ------------------------------------------------------------------------------------

def list_benchmarks(store: GraphStore) -> list[dict[str, Any]]:
    """One row per (family, snapshot) the store holds generated questions of."""
    return store.run("MATCH (q:Question)-[:GENERATED_AT]->(s:Snapshot) "
                     "RETURN q.family AS family, s.id AS snapshot, s.taken_at AS taken_at, count(q) AS questions "
                     "ORDER BY family, snapshot")


def delete_benchmark(store: GraphStore, family: str, snapshot: str, derived: bool = False) -> Removal:
    """The family's questions generated at `snapshot` (a question also generated at another snapshot only loses
    that link), and the snapshot when nothing else was generated at it or evaluated against it; predictions on
    removed questions (and runs left without one) are refused unless `derived`, then removed with them."""
    rows = store.run("MATCH (q:Question {family: $f})-[:GENERATED_AT]->(:Snapshot {id: $s}) "
                     "OPTIONAL MATCH (q)-[:GENERATED_AT]->(o:Snapshot) WHERE o.id <> $s "
                     "RETURN q.id AS id, count(o) AS others", {"f": family, "s": snapshot})
    if not rows:
        raise ChronoKGError(f"no {family} questions generated at {snapshot!r} in the store "
                            "(chronokg bench list shows what is held)")
    gone = {r["id"] for r in rows if not r["others"]}
    unlink = [r["id"] for r in rows if r["others"]]
    removal = Removal(what=f"benchmark {family} at {snapshot}", removed={schema.QUESTION: len(gone)})
    preds = _predictions(store, gone, [])
    if preds and not derived:
        raise ChronoKGError(f"{removal.what}: {len(preds):,} predictions answer these questions; delete their "
                            "runs first (chronokg eval runs delete) or pass --derived to remove them too")
    statements, runs = _remove_derived(store, gone, [], removal)
    orphaned = _orphaned(store, {snapshot}, gone | set(unlink), runs)
    statements += [
        ("UNWIND $ids AS i MATCH (q:Question {id: i})-[g:GENERATED_AT]->(:Snapshot {id: $s}) DELETE g",
         {"ids": unlink, "s": snapshot}),
        _delete(schema.QUESTION, gone),
    ]
    if unlink:
        removal.removed["GENERATED_AT"] = len(unlink)
    if orphaned:
        statements.append(_delete(schema.SNAPSHOT, orphaned))
        removal.removed[schema.SNAPSHOT] = 1
    _commit(store, statements)
    return Removal(what=removal.what, removed={k: v for k, v in removal.removed.items() if v})


def _predictions(store: GraphStore, questions: Iterable[str], runs: Iterable[str]) -> set[str]:
    """The predictions answering `questions` or made in `runs`, each once (a run's prediction answers a question
    of the same benchmark: counting both ways would count it twice)."""
    found = {r["id"] for r in store.run("UNWIND $ids AS i MATCH (p:Prediction)-[:ANSWERS]->(:Question {id: i}) "
                                        "RETURN p.id AS id", {"ids": sorted(questions)})}
    return found | {r["id"] for r in store.run("UNWIND $ids AS i MATCH (p:Prediction)-[:IN_RUN]->(:Run {id: i}) "
                                               "RETURN p.id AS id", {"ids": sorted(runs)})}


def _emptied_runs(store: GraphStore, predictions: set[str]) -> set[str]:
    """Runs every prediction of which is in `predictions`: nothing of them would be left."""
    rows = store.run("MATCH (p:Prediction)-[:IN_RUN]->(r:Run) WITH r, collect(p.id) AS ps "
                     "RETURN r.id AS id, ps", {})
    return {r["id"] for r in rows if set(r["ps"]) <= predictions}


def _remove_derived(store: GraphStore, questions: Iterable[str], runs: Iterable[str], removal: Removal
                    ) -> tuple[list[Statement], set[str]]:
    """Delete the predictions on `questions` and in `runs`, `runs` and the runs that leaves without a prediction
    (returned); `removal` counts each node once, as deleted."""
    asked = set(runs)
    preds = _predictions(store, questions, asked)
    gone = asked | _emptied_runs(store, preds)
    removal.removed[schema.PREDICTION] = len(preds)
    removal.removed[schema.RUN] = len(gone)
    return [_delete(schema.PREDICTION, preds), _delete(schema.RUN, gone)], gone


# --- source releases -----------------------------------------------------------------------------------------

def owned_by(store: GraphStore, sources: list[str], origin_file: str | None,
             closure: bool = False) -> dict[str, set[str]]:
    """Nodes whose every provenance edge points to one of `sources`, then the nodes left with nothing else or
    first staged from the release's file (`from_record`) and linked to a removed node. With `closure`, a node
    without provenance joins when every neighbour that has provenance is theirs (what a source's releases made
    together, cycles of unanchored nodes included)."""
    owned: dict[str, set[str]] = {}
    for rel in PROVENANCE:
        rows = store.run(f"MATCH (n)-[:{rel}]->(x:Source) WHERE x.id IN $s "
                         f"OPTIONAL MATCH (n)-[:{rel}]->(o:Source) WHERE NOT o.id IN $s "
                         "RETURN labels(n)[0] AS label, n.id AS id, count(o) AS others", {"s": sources})
        for r in rows:
            if not r["others"]:
                owned.setdefault(r["label"], set()).add(r["id"])
    frontier = [(label, i) for label, ids in owned.items() for i in ids]
    while frontier:  # neighbours that only hang off removed nodes go too (entities, source questions, ...)
        rows = store.run("UNWIND $refs AS r MATCH (n {id: r.id}) WHERE r.label IN labels(n) MATCH (n)--(m) "
                         "WHERE NOT m:Source AND NOT any(l IN labels(m) WHERE l IN $derived) "
                         "RETURN DISTINCT labels(m)[0] AS label, m.id AS id",
                         {"refs": [{"label": lab, "id": i} for lab, i in frontier], "derived": list(DERIVED)})
        candidates = [(r["label"], r["id"]) for r in rows if r["id"] not in owned.get(r["label"], set())]
        frontier = []
        for label, node_id in candidates:
            links = store.run(f"MATCH (m:{label} {{id: $id}})--(x) WHERE NOT any(l IN labels(x) WHERE l IN $derived) "
                              "RETURN labels(x)[0] AS label, x.id AS id, m.from_record AS origin, "
                              f"exists((m)-[:{schema.ASSERTED_IN}|{schema.LOADED_FROM}]->()) AS anchored, "
                              f"exists((x)-[:{schema.ASSERTED_IN}|{schema.LOADED_FROM}]->()) AS linked",
                              {"id": node_id, "derived": list(DERIVED)})
            if any(r["anchored"] for r in links):
                continue
            made_here = bool(links) and origin_file is not None and split_origin(links[0]["origin"])[0] == origin_file
            if made_here or all(r["id"] in owned.get(r["label"], set()) or (closure and not r["linked"])
                                for r in links):
                owned.setdefault(label, set()).add(node_id)
                frontier.append((label, node_id))
    return owned


def drop_release(store: GraphStore, source: str, derived: bool = False, force: bool = False,
                 rebuild: Rebuild | None = None, calls: Sequence[Statement] = ()) -> Removal:
    """Remove what only `source` asserted, in one transaction (see the module docstring). Values it replaced on
    nodes that stay are put back (`graph.prior`); where that cannot be done exactly (a list a later release
    changed again) the drop is refused, naming them, unless `force` (they then keep their current value).
    With `rebuild` (the other releases of its source replayed: `chronokg.ingest.replay`), the source's nodes
    and edges become exactly the replay's instead, and only nodes outside it are undone in place. `calls`: the
    other releases' recorded calls rewritten (without its paths), in the same transaction."""
    found = store.run("MATCH (s:Source {id: $id}) RETURN s.path AS path", {"id": source})
    if not found:
        known = [r["id"] for r in store.run("MATCH (s:Source) RETURN s.id AS id ORDER BY id")]
        raise ChronoKGError(f"no release {source!r} in the store (loaded: {', '.join(known) or 'none'})")
    # Nodes remember the file they were first staged from: the release's own file, unless another has its name.
    name = PurePath(found[0]["path"]).name if found[0]["path"] else None
    others = {PurePath(r["p"]).name for r in store.run("MATCH (s:Source) WHERE s.id <> $id AND s.path IS NOT NULL "
                                                        "RETURN s.path AS p", {"id": source})}
    owned = owned_by(store, [source], name if name not in others else None) if rebuild is None else rebuild.removed()
    refs = [{"label": lab, "id": i} for lab, ids in owned.items() for i in ids]
    questions = {r["id"] for r in store.run(
        "UNWIND $refs AS r MATCH (q:Question)-->(n {id: r.id}) WHERE r.label IN labels(n) RETURN DISTINCT q.id AS id",
        {"refs": refs})}
    snapshots = [r["id"] for r in store.run("MATCH (s:Snapshot) WHERE $src IN s.sources RETURN s.id AS id",
                                            {"src": source})]
    questions |= {r["id"] for r in store.run(  # generated only at snapshots that included the release
        "UNWIND $snaps AS sid MATCH (q:Question)-[:GENERATED_AT]->(:Snapshot {id: sid}) "
        "OPTIONAL MATCH (q)-[:GENERATED_AT]->(o:Snapshot) WHERE NOT o.id IN $snaps "
        "WITH q, count(o) AS others WHERE others = 0 RETURN q.id AS id", {"snaps": snapshots})}
    runs = [r["id"] for r in store.run("MATCH (r:Run) WHERE r.snapshot IN $snaps RETURN r.id AS id",
                                       {"snaps": snapshots})]  # evaluated against a store holding it
    removal = Removal(what=f"release {source}", removed={k: len(v) for k, v in owned.items()})
    scope = owned if rebuild is None else rebuild.scope
    put_back, restored, unsplit = prior.restore(store, source, scope)
    if unsplit and not force:
        raise ChronoKGError(f"release {source}: {len(unsplit):,} values it changed cannot be restored, because a "
                            f"later release changed them again ({', '.join(unsplit[:3])}"
                            f"{' …' if len(unsplit) > 3 else ''}); pass --force to drop it anyway (they keep "
                            "their current value)")
    removal.kept = unsplit
    if restored:
        removal.restored["values (latest wins)"] = restored
    statements: list[Statement] = []
    if questions or snapshots or runs:
        if not derived:
            raise ChronoKGError(f"release {source}: {len(questions):,} generated questions, {len(snapshots):,} "
                                f"snapshots and {len(runs):,} runs depend on it; pass --derived to remove them "
                                "(and their predictions) too")
        statements += _remove_derived(store, questions, runs, removal)[0]
        removal.removed[schema.QUESTION] = len(questions)
        removal.removed[schema.SNAPSHOT] = len(snapshots)
        statements += [_delete(schema.QUESTION, questions), _delete(schema.SNAPSHOT, snapshots)]
    if rebuild is None:
        statements += [_delete(label, ids) for label, ids in owned.items()]
        statements += _reassert(store, source, removal)
        statements += _reopen_revision(store, source, owned.get(schema.FACT, set()), removal)
    else:
        statements += rebuild.statements(store, removal)
    statements += _restore_captions(store, source, scope.get(schema.ENTITY, set()), removal)
    statements += put_back
    statements.append(_delete(schema.SOURCE, [source]))
    removal.removed[schema.SOURCE] = 1
    statements += rebuild.calls if rebuild is not None else list(calls)
    _commit(store, statements)
    return Removal(what=removal.what, removed={k: v for k, v in removal.removed.items() if v},
                   updated=removal.updated, restored=removal.restored, kept=removal.kept)


def _reassert(store: GraphStore, source: str, removal: Removal) -> list[Statement]:
    """Facts other releases assert too: their known time and provenance as if `source` had never been loaded."""
    rows = store.run(
        "MATCH (f:Fact)-[:ASSERTED_IN]->(:Source {id: $s}) MATCH (f)-[:ASSERTED_IN]->(o:Source) WHERE o.id <> $s "
        "WITH f, o ORDER BY o.release_date, o.id "
        "WITH f, collect(o) AS others WHERE f.source_id = $s OR f.retracted_by = $s "
        "RETURN f.id AS id, f.source_id = $s AS moved, f.retracted_by = $s AS retracted, "
        "others[0].id AS first, others[0].release_date AS known_from, others[0].kind AS kind", {"s": source})
    moved = [{"id": r["id"], "src": r["first"], "known": r["known_from"], "kind": r["kind"]}
             for r in rows if r["moved"]]
    reopened = [r["id"] for r in rows if r["retracted"]]
    reopened += [r["id"] for r in store.run(  # retracted by it, asserted by other releases only
        "MATCH (f:Fact) WHERE f.retracted_by = $s AND NOT (f)-[:ASSERTED_IN]->(:Source {id: $s}) RETURN f.id AS id",
        {"s": source})]
    counts = Counter({schema.FACT: len({r["id"] for r in rows} | set(reopened))})
    removal.updated.update({k: v for k, v in counts.items() if v})
    return [
        ("UNWIND $rows AS r MATCH (f:Fact {id: r.id}) SET f.source_id = r.src, f.known_from = r.known, "
         "f.source_kind = r.kind, f.from_record = null", {"rows": moved}),
        ("UNWIND $ids AS i MATCH (f:Fact {id: i}) SET f.known_to = null, f.retracted_by = null", {"ids": reopened}),
    ]


def _restore_captions(store: GraphStore, source: str, removed: set[str], removal: Removal) -> list[Statement]:
    """Entity names the release replaced ("latest wins", kept as dated `caption_versions`): its dated version
    goes, and a caption that was the latest version becomes the latest remaining one. Left as they are when
    another remaining release has the same date (its version may be that one)."""
    dates = {str(r["id"]): r["d"] for r in store.run("MATCH (s:Source) RETURN s.id AS id, s.release_date AS d")}
    day = dates.get(source)
    if day is None or day in {d for i, d in dates.items() if i != source}:
        return []
    prefix = f"{day.isoformat()}\t"
    rows = store.run(f"MATCH (e:Entity) WHERE any(v IN e.{CAPTION_VERSIONS} WHERE v STARTS WITH $p) "
                     f"RETURN e.id AS id, e.caption AS caption, e.{CAPTION_VERSIONS} AS versions", {"p": prefix})
    changes = []
    for r in rows:
        if r["id"] in removed:
            continue
        old: list[str] = list(r["versions"])
        kept = versions([v for v in old if not v.startswith(prefix)]) or []
        latest = r["caption"] == old[-1].split("\t", 1)[1]  # the caption followed the versions (latest wins)
        caption = kept[-1].split("\t", 1)[1] if latest and kept else r["caption"]
        changes.append({"id": r["id"], "caption": caption, "versions": kept or None})
    if changes:
        removal.restored[f"{schema.ENTITY} caption"] = len(changes)
    return [(f"UNWIND $rows AS r MATCH (e:Entity {{id: r.id}}) SET e.caption = r.caption, "
             f"e.{CAPTION_VERSIONS} = r.versions", {"rows": changes})] if changes else []


def _reopen_revision(store: GraphStore, source: str, removed: set[str], removal: Removal) -> list[Statement]:
    """A release that is one revision of an entity (Wikidata: `Source.entity_id`, `version`) closed the entity's
    facts it no longer asserted at its date; without it they stay open until the next remaining revision."""
    src = store.run("MATCH (s:Source {id: $s}) RETURN s.entity_id AS entity, s.kind AS kind, "
                    "s.release_date AS day", {"s": source})[0]
    if src["entity"] is None:
        return []
    revisions = {int(r["v"]): r["d"] for r in store.run(
        "MATCH (s:Source) WHERE s.entity_id = $e AND s.kind = $k AND s.id <> $s RETURN s.version AS v, "
        "s.release_date AS d", {"e": src["entity"], "k": src["kind"], "s": source}) if r["v"] is not None}
    rows = store.run("MATCH (f:Fact {subject_id: $e}) WHERE f.known_to = $day "
                     "OPTIONAL MATCH (f)-[:ASSERTED_IN]->(o:Source) WHERE o.id <> $s AND o.kind = $k "
                     "RETURN f.id AS id, collect(o.version) AS revs",
                     {"e": src["entity"], "day": src["day"], "s": source, "k": src["kind"]})
    changes = []
    for r in rows:
        revs = [int(v) for v in r["revs"] if v is not None]
        if r["id"] in removed or not revs:
            continue
        later = sorted(v for v in revisions if v > max(revs))
        changes.append({"id": r["id"], "known_to": revisions[later[0]] if later else None})
    if changes:
        removal.updated[schema.FACT] = removal.updated.get(schema.FACT, 0) + len(changes)
    return [("UNWIND $rows AS r MATCH (f:Fact {id: r.id}) SET f.known_to = r.known_to", {"rows": changes})
            ] if changes else []

"""Loads that can be replayed, and dropping a release by replaying the others of its source.

Undoing one release in place cannot always be exact: a UMLS release closes the relations it no longer holds and
infers valid dates from its neighbours, a TempoMed file decides which record a shared node remembers, a name
belongs to the release that gave it. What the store holds for a source is a pure function of the releases loaded
and their order, so the exact drop is to load the remaining releases again, in the same order, into a scratch
store, and make the source's part of the real store equal to it in one transaction (`graph.lifecycle`).

To replay, a load records on each `Source` it created the call that made it (`load_call`: the source's name in
`SOURCES`, a load sequence number, and the loader's keywords as given, paths absolute and in the order given)
and the files the release was read from with a digest of each (`chronokg.ingest.inputs`). The replay loads each
call's paths in the order given, wherever the drop runs; a changed, moved or added input file is refused before
anything is replayed, naming the release and the file, and a replayed release must come back with the same id.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from chronokg.errors import ChronoKGError
from chronokg.graph import lifecycle, schema
from chronokg.graph.kglite_files import REPLAY_PREFIX
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.lifecycle import Edge, Ref
from chronokg.graph.store import GraphStore, Statement
from chronokg.ingest import inputs
from chronokg.ingest.options import resolve
from chronokg.ingest.sources import SOURCES, SourceSpec
from chronokg.progress import Progress

LOAD_CALL = "load_call"
ENGINE = {"title", "name", "label", "type"}  # filled by kglite itself, never written by chronokg


def _encode(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value.resolve())
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    return value


def _prepare(spec: SourceSpec, values: dict[str, Any]) -> dict[str, Any]:
    if spec.ingest is None or spec.ingest.prepare is None:
        return dict(values)
    prepared: dict[str, Any] = resolve(spec.ingest.prepare)(dict(values))
    return prepared


def load(store: GraphStore, name: str, values: Mapping[str, Any], progress: Progress | None = None) -> Any:
    """Run source `name`'s loader with `values` (its keywords as the CLI gives them, before `prepare`) and record
    the call, and each release's input files with their digests, on the Sources it created, so that dropping a
    release can replay it."""
    spec = SOURCES.get(name)
    if spec.ingest is not None:
        inputs.check_names(Path(p) for p in values.get(_paths_key(spec), []))
    before = {r["id"] for r in store.run("MATCH (s:Source) RETURN s.id AS id")}
    summary = resolve(spec.loader)(store, **_prepare(spec, dict(values)), progress=progress)
    rows = store.run("MATCH (s:Source) RETURN s.id AS id, s.path AS path")
    new = sorted({str(r["id"]) for r in rows} - before)
    if new:
        seqs = [json.loads(r["c"])["seq"] for r in store.run(
            f"MATCH (s:Source) WHERE s.{LOAD_CALL} IS NOT NULL RETURN s.{LOAD_CALL} AS c")]
        call = _call_text(name, max(seqs, default=0) + 1, {k: _encode(v) for k, v in values.items()})
        paths = {str(r["id"]): r["path"] for r in rows if str(r["id"]) in new}
        given = [str(p) for p in values.get(_paths_key(spec), [])]
        found = inputs.of_load(paths, given, [str(p) for p in summary.paths])
        store.declare_properties(schema.SOURCE, [LOAD_CALL, inputs.INPUTS])
        store.write(iter([(f"UNWIND $rows AS r MATCH (s:Source {{id: r.id}}) SET s.{LOAD_CALL} = $c, "
                           f"s.{inputs.INPUTS} = r.inputs",
                           {"rows": [{"id": i, "inputs": found[i].text()} for i in new], "c": call})]))
    return summary


def _call_text(name: str, seq: int, values: Mapping[str, Any]) -> str:
    return json.dumps({"source": name, "seq": seq, "values": values}, sort_keys=True, ensure_ascii=False)


# --- dropping by replay ------------------------------------------------------------------------------------------

def drop_release(store: GraphStore, source: str, derived: bool = False, force: bool = False) -> lifecycle.Removal:
    """Drop `source` exactly: replay the remaining releases of its source and make the store's part of that source
    equal to the replay (see the module docstring). A store whose releases carry no recorded call (loaded before
    calls were recorded) is dropped by undoing in place (`graph.lifecycle.drop_release`); a replay whose inputs are
    gone or changed is refused, unless `force` (then undone in place too). Either way the removal says when it
    was undone in place."""
    rows = store.run(f"MATCH (s:Source) RETURN s.id AS id, s.kind AS kind, s.path AS path, s.{LOAD_CALL} AS call, "
                     f"s.{inputs.INPUTS} AS inputs")
    calls = {str(r["id"]): json.loads(r["call"]) if r["call"] else None for r in rows}
    kinds = {str(r["id"]): r["kind"] for r in rows}
    mine = calls.get(source)
    if mine is None or any(c is None and kinds[i] == kinds[source] for i, c in calls.items()):
        return _in_place(lifecycle.drop_release(store, source, derived, force),  # loaded before loads were recorded
                         "a release of its source was loaded without a recorded call, by an older chronokg or not "
                         "through `ingest`")
    family = {i: c for i, c in calls.items() if c is not None and c["source"] == mine["source"]}
    recorded = {str(r["id"]): _inputs_of(r) for r in rows if str(r["id"]) in family}
    try:
        for i in sorted(set(family) - {source}):
            why = inputs.changed(recorded[i])
            if why:
                raise _NotReplayable(f"release {i}: {why}")
        with tempfile.TemporaryDirectory(prefix=f"{REPLAY_PREFIX}{os.getpid()}-") as tmp:
            scratch = KgliteStore(Path(tmp) / "replay.kgl", durable="off")
            try:
                _replay(scratch, source, family, recorded)
                rebuild = _rebuild(store, scratch, source, set(family))
            finally:
                scratch.close()
    except _NotReplayable as exc:
        if not force:
            raise ChronoKGError(f"release {source}: {exc}; the drop replays the other releases of its source from "
                                "their files (pass --force to undo it in place instead, which may leave values the "
                                "release changed)") from None
        return _in_place(lifecycle.drop_release(store, source, derived, force,
                                                calls=_calls_without(source, family, recorded)), str(exc))
    return lifecycle.drop_release(store, source, derived, force, rebuild=rebuild)


def _in_place(removal: lifecycle.Removal, why: str) -> lifecycle.Removal:
    removal.note = f"undone in place, not replayed ({why}): values the release changed may remain"
    return removal


def _inputs_of(row: Mapping[str, Any]) -> inputs.Inputs:
    """A release's recorded inputs; one loaded before inputs were recorded: its `path`, as the drop resolves it."""
    found = inputs.Inputs.parse(row["inputs"])
    if found is not None:
        return found
    return inputs.Inputs(roots=[str(inputs.absolute(p)) for p in inputs.split(str(row["path"]))]
                         if row["path"] else [], recorded=False)


class _NotReplayable(Exception):
    pass


def _replay(scratch: GraphStore, source: str, family: dict[str, dict[str, Any]],
            recorded: dict[str, inputs.Inputs]) -> None:
    """Load the family's remaining releases into `scratch`, one recorded call at a time in load order, each with
    its paths in the order given; the call that also made `source` loads the same paths without its input."""
    by_seq: dict[int, list[str]] = {}
    for i, call in family.items():
        by_seq.setdefault(int(call["seq"]), []).append(i)
    remaining = set(family) - {source}
    for seq in sorted(by_seq):
        ids = by_seq[seq]
        call = family[ids[0]]
        spec = SOURCES.get(call["source"])
        values = _without(spec, call, ids, source, recorded)
        if values is None:
            continue
        try:
            load(scratch, spec.name, _typed(spec, values))
        except (ChronoKGError, OSError) as exc:
            raise _NotReplayable(f"replaying {', '.join(sorted(ids))} failed: {exc}") from None
    got = {r["id"] for r in scratch.run("MATCH (s:Source) RETURN s.id AS id")}
    missing, extra = sorted(remaining - got), sorted(got - remaining)
    if missing:
        raise _NotReplayable(f"the input of {', '.join(missing[:3])} changed or moved since it was loaded")
    if extra:
        raise _NotReplayable(f"replaying the recorded calls also made {', '.join(extra[:3])}, which the store does "
                             "not hold")


def _without(spec: SourceSpec, call: Mapping[str, Any], ids: list[str], source: str,
             recorded: Mapping[str, inputs.Inputs]) -> dict[str, Any] | None:
    """A recorded call's values (the call that made `ids`) with the paths of release `source` left out, also
    where a later call gave its files again (creating only other releases); None when it made only `source`."""
    values = dict(call["values"])
    kept = [i for i in ids if i != source]
    if not kept:
        return None
    key = _paths_key(spec)
    paths = inputs.without(values[key], recorded[source], [recorded[i] for i in kept])
    if source in ids or paths != values[key]:
        bare = [i for i in sorted(ids) if not recorded[i].roots]
        if bare:
            raise _NotReplayable(f"a release loaded with it ({bare[0]}) records no file of its own")
        values[key] = paths
    return values


def _calls_without(source: str, family: Mapping[str, Mapping[str, Any]],
                   recorded: Mapping[str, inputs.Inputs]) -> list[Statement]:
    """The other releases' recorded calls without the paths of `source`, for a drop undone in place: a later
    drop then replays them without it, as it replays calls after a drop by replay."""
    rows = []
    for i, call in sorted(family.items()):
        if i == source:
            continue
        ids = sorted(j for j, c in family.items() if c["seq"] == call["seq"])
        try:
            values = _without(SOURCES.get(call["source"]), call, ids, source, recorded)
        except _NotReplayable:
            continue  # a release of that call names no file of its own: its call stays as recorded
        if values is not None:
            rows.append({"id": i, "c": _call_text(call["source"], int(call["seq"]), values)})
    return [(f"UNWIND $rows AS r MATCH (s:Source {{id: r.id}}) SET s.{LOAD_CALL} = r.c", {"rows": rows})]


def _same(value: Any) -> Any:
    return value


_CONVERT: dict[str, Callable[[Any], Any]] = {"path": Path, "date": dt.date.fromisoformat}


def _paths_key(spec: SourceSpec) -> str:
    assert spec.ingest is not None
    return next(p.keyword for p in spec.ingest.params if p.kind == "path" and p.argument)


def _typed(spec: SourceSpec, values: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded call's values typed again as the CLI gives them (before `prepare`, which `load` runs)."""
    assert spec.ingest is not None
    params = {p.keyword: p for p in spec.ingest.params}
    out: dict[str, Any] = {}
    for key, value in values.items():
        p = params[key]
        convert: Callable[[Any], Any] = resolve(p.enum) if p.kind == "enum" and p.enum else _CONVERT.get(
            p.kind, _same)
        out[key] = [convert(v) for v in value] if isinstance(value, list) else convert(value)
    return out


def _props(p: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in p.items() if k not in ENGINE}


def _rebuild(store: GraphStore, scratch: GraphStore, source: str, family: set[str]) -> lifecycle.Rebuild:
    """What makes the store's part of the family equal to `scratch`: nodes to delete, to create and to rewrite,
    edges to delete and create, and every remaining Source's call renumbered in load order."""
    owned = lifecycle.owned_by(store, sorted(family), None, closure=True)
    owned.setdefault(schema.SOURCE, set()).update(family)
    scope = {(lab, i) for lab, ids in owned.items() for i in ids}
    old = {(str(r["l"]), str(r["id"])): _props(r["p"]) for lab, ids in owned.items() for r in store.run(
        f"UNWIND $ids AS i MATCH (n:{lab} {{id: i}}) RETURN labels(n)[0] AS l, n.id AS id, properties(n) AS p",
        {"ids": sorted(ids)})}
    new = {(str(r["l"]), str(r["id"])): _props(r["p"])
           for r in scratch.run("MATCH (n) RETURN labels(n)[0] AS l, n.id AS id, properties(n) AS p")}
    for key in [k for k in new if k[0] == schema.SOURCE and k in old]:  # the path as it was given, not resolved
        new[key]["path"] = old[key].get("path")
    outside = [k for k in new if k not in old]
    exists = _existing(store, outside)
    create = {k: new[k] for k in outside if k not in exists}
    rewrite = {k: {**{key: None for key in old[k] if key not in new[k]}, **new[k]}
               for k in new if k in old and old[k] != new[k]}
    delete = {k for k in old if k not in new}
    touched = scope | set(create)
    before = _edges(store, scope)
    after = Counter(e for e in _edges(scratch, None).elements() if e[1] in touched or e[2] in touched)
    pairs = {e[:3] for e in (before - after) + (after - before)}
    changed = Counter(f"{ref[0]} {key}" for ref, props in rewrite.items() for key in props
                      if key != LOAD_CALL and old[ref].get(key) != props[key])
    return lifecycle.Rebuild(
        scope=owned, delete=delete, create=create, rewrite=rewrite, changed=dict(changed),
        edges_out=sorted(pairs), edges_in=sorted(e for e in after.elements() if e[:3] in pairs),
        calls=_renumbered(store, scratch, source))


def _existing(store: GraphStore, refs: list[Ref]) -> set[Ref]:
    found: set[Ref] = set()
    by_label: dict[str, list[str]] = {}
    for lab, i in refs:
        by_label.setdefault(lab, []).append(i)
    for lab, ids in by_label.items():
        found |= {(lab, str(r["id"])) for r in store.run(f"UNWIND $ids AS i MATCH (n:{lab} {{id: i}}) "
                                                         "RETURN n.id AS id", {"ids": ids})}
    return found


def _edges(store: GraphStore, scope: set[Ref] | None) -> Counter[Edge]:
    """Edges (with multiplicity) that touch `scope` (None: all), leaving out those to generated nodes."""
    if scope is None:
        rows = store.run("MATCH (a)-[e]->(b) RETURN type(e) AS t, labels(a)[0] AS la, a.id AS a, "
                         "labels(b)[0] AS lb, b.id AS b, properties(e) AS p")
    else:
        refs = [{"l": lab, "id": i} for lab, i in sorted(scope)]
        rows = [r for q in ("MATCH (a {id: r.id}) WHERE r.l IN labels(a) MATCH (a)-[e]->(b)",
                            "MATCH (b {id: r.id}) WHERE r.l IN labels(b) MATCH (a)-[e]->(b)")
                for r in store.run(f"UNWIND $refs AS r {q} RETURN type(e) AS t, labels(a)[0] AS la, a.id AS a, "
                                   "labels(b)[0] AS lb, b.id AS b, properties(e) AS p", {"refs": refs})]
    out: Counter[Edge] = Counter()
    for r in rows:
        if r["la"] in lifecycle.DERIVED or r["lb"] in lifecycle.DERIVED:
            continue
        edge = (str(r["t"]), (str(r["la"]), str(r["a"])), (str(r["lb"]), str(r["b"])),
                json.dumps(_props(r["p"] or {}), sort_keys=True, default=str))
        out[edge] += 1
    if scope is not None:  # an edge inside the scope was read from both of its ends
        out = Counter({e: (n // 2 if e[1] in scope and e[2] in scope else n) for e, n in out.items()})
    return out


def _renumbered(store: GraphStore, scratch: GraphStore, source: str) -> list[Statement]:
    """Every remaining Source's recorded call with its sequence number renumbered 1, 2, ... in load order (as a
    store that never loaded `source` numbers them), the replayed ones as the replay recorded them."""
    replayed = {str(r["id"]): json.loads(r["c"]) for r in scratch.run(
        f"MATCH (s:Source) WHERE s.{LOAD_CALL} IS NOT NULL RETURN s.id AS id, s.{LOAD_CALL} AS c")}
    calls = {str(r["id"]): json.loads(r["c"]) for r in store.run(
        f"MATCH (s:Source) WHERE s.{LOAD_CALL} IS NOT NULL AND s.id <> $s RETURN s.id AS id, s.{LOAD_CALL} AS c",
        {"s": source})}
    ranks = {seq: n for n, seq in enumerate(sorted({int(c["seq"]) for c in calls.values()}), 1)}
    rows = [{"id": i, "c": _call_text(c["source"], ranks[int(c["seq"])], replayed.get(i, c)["values"])}
            for i, c in sorted(calls.items())]
    return [(f"UNWIND $rows AS r MATCH (s:Source {{id: r.id}}) SET s.{LOAD_CALL} = r.c", {"rows": rows})]

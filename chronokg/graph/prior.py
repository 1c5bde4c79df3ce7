"""What a release overwrote, kept so that dropping it can put it back.

A "latest wins" property (`Policy.with_latest`: a Wikidata fact's attributes, CFR `cfr_node`/`cfr_part`, a
ChroKnowBench row's `row_json`, ...) or a list that grows by union (an entity's `aliases`) keeps no history: a
newer release replaces the value. So the writer records, in the same transaction as the load, the value each
release replaced on a node that was already stored: `prior_values`, one entry per (release, key),
`"<release id>\t<key>\t<value as tagged JSON>"` in load order (a key the node did not have is recorded as
null). `releases drop` restores from it (`restore`): the value goes back where the dropped release was the last
to change the key; where a later release changed it again, that release's entry takes over the dropped one's
older value (so dropping it too restores the value from before both). A union list changed again by a later
release cannot be split into what each added: such a key is reported, and the drop refused unless forced.
Entity captions are not recorded here: their dated versions (`caption_versions`) restore them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from typing import Any

from chronokg.graph import schema
from chronokg.graph.merge import ORIGIN, Merge, Outcome, Policy
from chronokg.graph.store import GraphStore, Statement

PRIOR = "prior_values"
SKIP = {schema.ENTITY: {"caption", "caption_versions"}}  # restored from their dated versions (graph.lifecycle)


def _encode(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1:
        (tag, text), = value.items()
        if tag == "$datetime":
            return dt.datetime.fromisoformat(text)
        if tag == "$date":
            return dt.date.fromisoformat(text)
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def entry(release: str, key: str, value: Any) -> str:
    return f"{release}\t{key}\t{json.dumps(_encode(value), sort_keys=True, ensure_ascii=False)}"


def parse(text: str) -> tuple[str, str, Any]:
    release, key, value = text.split("\t", 2)
    return release, key, _decode(json.loads(value))


def release_of(row: Mapping[str, Any], sources: Mapping[str, Any]) -> str | None:
    """The release a staged row comes from: its own `source_id` when the load stages that Source, else the
    newest release the load stages (by date, then id); None when it stages none."""
    own = row.get("source_id")
    if isinstance(own, str) and own in sources:
        return own
    if not sources:
        return None
    return max(sources, key=lambda s: (str(sources[s] or ""), s))


def note(label: str, old: Mapping[str, Any], new: Mapping[str, Any], outcome: Outcome, policy: Policy,
         release: str | None) -> None:
    """Add to `outcome.changes` the `prior_values` entries of the latest-wins and union keys this merge changes
    on stored node `old`."""
    if release is None or not outcome.changes:
        return
    skip = {*SKIP.get(label, set()), *policy.follows.get(label, {}), ORIGIN, PRIOR}  # provenance moves by its lead
    entries = [entry(release, key, old.get(key)) for key in sorted(outcome.changes)
               if key in new and key not in skip and policy.rule(label, key) in (Merge.LATEST, Merge.UNION)]
    if entries:
        outcome.changes[PRIOR] = [*(old.get(PRIOR) or []), *entries]


def restore(store: GraphStore, source: str, removed: Mapping[str, set[str]]) -> tuple[list[Statement], int,
                                                                                      list[str]]:
    """Statements that put back what `source` overwrote on the nodes that stay, how many values they restore,
    and the (label, id, key) of union lists a later release changed again, which cannot be split (those keep
    their current value; the dropped release's entry goes)."""
    rows = store.run(f"MATCH (n) WHERE n.{PRIOR} IS NOT NULL AND any(v IN n.{PRIOR} WHERE v STARTS WITH $p) "
                     f"RETURN labels(n)[0] AS label, n.id AS id, n.{PRIOR} AS prior ORDER BY label, id",
                     {"p": f"{source}\t"})
    by_label: dict[str, list[dict[str, Any]]] = {}
    restored = 0
    unsplit: list[str] = []
    for r in rows:
        if r["id"] in removed.get(r["label"], set()):
            continue
        entries = [parse(e) for e in r["prior"]]
        props: dict[str, Any] = {}
        kept = list(entries)
        for n, (release, key, value) in enumerate(entries):
            if release != source:
                continue
            later = next((m for m in range(n + 1, len(entries)) if entries[m][1] == key), None)
            if later is None:
                props[key] = value
                restored += 1
            elif isinstance(value, list) or isinstance(entries[later][2], list):
                unsplit.append(f"{r['label']} {r['id']} {key}")
            else:
                kept[later] = (entries[later][0], key, value)
        props[PRIOR] = [entry(*e) for e in kept if e[0] != source] or None
        by_label.setdefault(r["label"], []).append({"id": r["id"], "props": props})
    statements: list[Statement] = [
        (f"UNWIND $rows AS r MATCH (n:{label} {{id: r.id}}) SET n += r.props", {"rows": changes})
        for label, changes in sorted(by_label.items())]
    return statements, restored, unsplit


def sources_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Staged Source rows as {id: release_date}."""
    return {str(r["id"]): r.get("release_date") for r in rows}

"""How a node's properties combine when it is staged again, within one input or against the store.

One rule decides both cases, so a load can never silently overwrite what an earlier
record or an earlier release said. By default a property is *strict*: a second value
that differs from the first is a conflict, reported with both origins. A few
properties have declared behaviours (see `DEFAULT_POLICY`), and a loader whose
inputs are ordered releases may declare more (`Policy.with_latest`):

* known time belongs to releases: a fact's `known_from` is the earliest date any
  loaded release asserted it (`source_id` and `origin` move with it), so loading
  the same statement again from a release dated later changes nothing;
  `known_to` is set only by a release that retracts the fact (or reopened by one
  that asserts it again, given explicitly as None).
* display labels (an entity's caption and kind) keep the first value;
  alias lists grow (union, first-seen order).

A value missing on one side is never a conflict: the other side's value is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from chronokg.graph import schema

ORIGIN = "from_record"  # where a node was first staged: "<file name>: record <r>" (not compared)


class Merge(StrEnum):
    STRICT = "strict"  # equal, or a conflict
    FIRST = "first"  # keep the first value (display labels)
    LATEST = "latest"  # a later release replaces the value (declared by loaders of ordered releases)
    UNION = "union"  # lists: union in first-seen order
    EARLIEST = "earliest"  # dates: keep the earliest; the keys that follow it move with it
    RETRACT = "retract"  # known_to: set by a retraction, reopened by an explicit None, else kept
    VERSIONS = "versions"  # "YYYY-MM-DD<TAB>value" lists: in date order, a value kept only where it changes


@dataclass(frozen=True)
class Policy:
    """Per-label merge rules; keys not listed are strict. `follows[label][key]` moves with its lead key."""

    rules: Mapping[str, Mapping[str, Merge]] = field(default_factory=dict)
    follows: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    defaults: Mapping[str, Merge] = field(default_factory=dict)  # per label, for keys without a rule

    def rule(self, label: str, key: str) -> Merge:
        return self.rules.get(label, {}).get(key) or self.defaults.get(label, Merge.STRICT)

    def with_latest(self, label: str, *keys: str) -> Policy:
        """This policy, with `keys` of `label` (no keys: every key without a rule) replaced by later releases.

        For loaders whose inputs are ordered releases (UMLS, CFR editions, Wikidata revisions)."""
        if not keys:
            return Policy(self.rules, self.follows, {**self.defaults, label: Merge.LATEST})
        rules = {k: dict(v) for k, v in self.rules.items()}
        rules.setdefault(label, {}).update({k: Merge.LATEST for k in keys})
        return Policy(rules, self.follows, self.defaults)


DEFAULT_POLICY = Policy(
    rules={
        schema.FACT: {"known_from": Merge.EARLIEST, "known_to": Merge.RETRACT},
        # caption_versions: the names releases gave an entity, each with its release date (versioned like facts)
        schema.ENTITY: {"caption": Merge.FIRST, "kind": Merge.FIRST, "aliases": Merge.UNION,
                        "caption_versions": Merge.VERSIONS},
        # The same organization is spelled differently across records ("SEOM–GEMCAD–TTD", "SEOM/GEMCAD/TTD").
        schema.ORGANIZATION: {"caption": Merge.FIRST},
        # Where a release's file was read from, and a question's row number: provenance, not content.
        schema.SOURCE: {"path": Merge.FIRST},
        schema.SOURCE_QUESTION: {"record": Merge.FIRST},
        # The same question (a content id) generated again, by a later chronokg or from a later snapshot: the
        # first generation's details stay on the node; each snapshot's own evidence is on its GENERATED_AT edge.
        schema.QUESTION: {"generator": Merge.FIRST, "snapshot": Merge.FIRST, "evidence_hash": Merge.FIRST,
                          "answer": Merge.FIRST, "metadata": Merge.FIRST},
        # The same run (its id is what was run) started again elsewhere: when and by which chronokg stay first.
        schema.RUN: {"started": Merge.FIRST, "chronokg": Merge.FIRST},
    },
    follows={
        schema.FACT: {"source_id": "known_from", ORIGIN: "known_from", "retracted_by": "known_to"},
    },
    # A prediction's id is (run, question, model, sample): the same run answered again elsewhere (say with
    # --no-cache, another output) keeps the stored prediction; the new answer stays in its own run folder.
    defaults={schema.PREDICTION: Merge.FIRST},
)


@dataclass
class Conflict:
    label: str
    node_id: str
    key: str
    old: Any
    new: Any


@dataclass
class Outcome:
    """What merging a staged node into an existing one does."""

    changes: dict[str, Any] = field(default_factory=dict)  # keys whose value changes, with the new value
    conflicts: list[Conflict] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # retracted, reopened, known_earlier


def _union(old: Any, new: Any) -> Any:
    if not isinstance(old, list) or not isinstance(new, list):
        return old if old == new else None
    return old + [v for v in new if v not in old]


def versions(*lists: Any) -> list[str] | None:
    """Dated versions ("YYYY-MM-DD<TAB>value") merged: date order, each value only from the date it changed,
    so any order or split of the same releases gives the same list. None if a side is not such a list."""
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in lists):
        return None
    out: list[str] = []
    for entry in sorted({x for v in lists for x in v}):
        if not out or entry[11:] != out[-1][11:]:
            out.append(entry)
    return out


def merge(label: str, node_id: str, old: Mapping[str, Any], new: Mapping[str, Any], policy: Policy) -> Outcome:
    """Merge `new` (staged) into `old` (the first staging, or the stored node): what changes, what conflicts.

    A key present in `new` with the value None means "explicitly unset" and only
    matters for RETRACT keys (a reopened fact); elsewhere None is "not given".
    """
    out = Outcome()
    follows = policy.follows.get(label, {})
    for key, value in new.items():
        if key == "id" or key in follows:
            continue
        if key == ORIGIN:  # where a node was first staged: kept, never compared
            if old.get(ORIGIN) is None and value is not None:
                out.changes[key] = value
            continue
        rule = policy.rule(label, key)
        current = old.get(key)
        if rule is Merge.RETRACT:
            if value is None:
                if current is not None and key in new:
                    out.changes[key] = None
                    out.events.append("reopened")
            elif current is None:
                out.changes[key] = value
                out.events.append("retracted")
            elif value < current:
                out.changes[key] = value
            continue
        if value is None or current == value:
            continue
        if current is None:
            out.changes[key] = value
        elif rule is Merge.EARLIEST:
            if value < current:
                out.changes[key] = value
                out.events.append("known_earlier")
        elif rule is Merge.LATEST:
            out.changes[key] = value
        elif rule is Merge.VERSIONS or rule is Merge.UNION:  # combined lists; None: the two cannot combine
            merged = (versions if rule is Merge.VERSIONS else _union)(current, value)
            if merged is None:
                out.conflicts.append(Conflict(label, node_id, key, current, value))
            elif merged != current:
                out.changes[key] = merged
        elif rule is Merge.STRICT:
            out.conflicts.append(Conflict(label, node_id, key, current, value))
    for key, lead in follows.items():
        if (lead in out.changes and key in new) or (key not in old and new.get(key) is not None):
            out.changes[key] = new[key]
    return out


def describe(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""`generate … --since`: exactly the questions whose evidence is new or changed since an earlier generation.

The baseline is an earlier question file (its questions and their evidence hashes, its snapshot) or a
snapshot id (the questions stored as generated at it, with each one's evidence on its `GENERATED_AT`
edge). A question is new when its id was not in the baseline, changed when its evidence hash differs.
A recorded snapshot with no stored questions falls back to what was loaded after it (`added_since`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from chronokg.bench import snapshot
from chronokg.bench.question import Question, read_jsonl
from chronokg.errors import ChronoKGError
from chronokg.graph.store import GraphStore


@dataclass(frozen=True)
class Baseline:
    """What `--since` compares against: the old snapshot and either its questions' evidence or the new
    releases."""

    snapshot: str
    evidence: dict[str, str] | None  # question id -> evidence hash at the old snapshot
    added: set[str] | None  # releases loaded after it (only when no questions are known)


def baseline(store: GraphStore, since: str, family: str) -> Baseline:
    """`since` as a question file (when the path exists) or a snapshot id."""
    path = Path(since)
    if path.is_file():
        questions = [q for q in read_jsonl(path) if q.family == family]
        if not questions:
            raise ChronoKGError(f"--since {path}: no {family} questions in it")
        snaps = sorted({q.snapshot for q in questions})
        return Baseline(snaps[0] if len(snaps) == 1 else ", ".join(snaps),
                        {q.id: q.answer_key.evidence_hash for q in questions}, None)
    rows = store.run("MATCH (q:Question {family: $family})-[g:GENERATED_AT]->(s:Snapshot {id: $id}) "
                     "RETURN q.id AS id, coalesce(g.evidence_hash, q.evidence_hash) AS hash",
                     {"family": family, "id": since})
    if rows:
        return Baseline(since, {r["id"]: r["hash"] for r in rows}, None)
    if not since.startswith("snap-"):
        raise ChronoKGError(f"--since {since!r}: neither a question file nor a snapshot id (snap-…)")
    return Baseline(since, None, snapshot.added_since(store, since))


def new_or_changed(questions: Sequence[Question], base: Baseline) -> list[Question]:
    """The questions whose id is not in the baseline or whose evidence differs from it."""
    if base.evidence is None:
        return list(questions)
    return [q for q in questions if base.evidence.get(q.id) != q.answer_key.evidence_hash]

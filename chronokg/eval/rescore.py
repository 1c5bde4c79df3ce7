"""Re-scoring a finished run without asking any model again: every question's answer key is re-run against the
store (as known now, or as the releases known on a past day said it), the answer it gives becomes the question's
target, and the run's stored answers are scored against it. The result is a new run folder linked to the old one,
and the list of verdicts that flipped, with the evidence on both sides.

A model's answer is what it said; whether that answer is right depends on what the store holds. When a guideline
changes, this tells which past verdicts flipped, for every run already made, at no model cost.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from chronokg.bench.family import FAMILIES
from chronokg.bench.question import AnswerKey, Question, write_jsonl
from chronokg.errors import ChronoKGError, InputError
from chronokg.eval.log import RunInfo, SampleRecord, latest, read_info, write_info
from chronokg.eval.profile import profile_for
from chronokg.eval.runner import RunOptions, check_files, file_hash, load_questions
from chronokg.graph.store import GraphStore
from chronokg.queries.spec import all_queries, evidence_hash
from chronokg.store_uri import StoreURI

QUESTIONS = "questions.jsonl"  # the re-scored questions (the new targets and evidence), inside the new folder
FLIPS = "flips.json"  # samples whose verdict flipped, right to wrong or wrong to right
NOT_SCORABLE = "not_scorable.json"  # samples scored before that no answer scores now
SCORABLE_NOW = "scorable_now.json"  # samples scored neither right nor wrong before that are scored now


class Flip(BaseModel):
    """One sample whose verdict differs after re-scoring."""

    question_id: str
    model: str
    sample: int
    family: str
    variant: str
    answer: str | None = Field(description="What the model answered (unchanged)")
    old_correct: bool | None
    new_correct: bool | None
    old_target: str
    new_target: str | None = Field(description="The target the evidence gives now (None: no option is the answer)")
    old_answer: str | None = Field(default=None, description="The old target's text")
    new_answer: str | None = Field(default=None, description="The new target's text")


class Rescored(BaseModel):
    """What `rescore` did: counted from what it wrote."""

    run_id: str
    folder: str
    rescored_from: str
    known_at: dt.date | None
    snapshot: str | None
    questions: int
    keys: int = Field(description="Distinct answer keys re-run")
    targets_changed: int = Field(description="Questions whose target the evidence now gives differs")
    no_answer: int = Field(description="Questions whose evidence now gives no answer among their options")
    samples: int = Field(description="Samples re-scored (failed samples are copied as they were)")
    flips: list[Flip] = Field(default_factory=list, description="Samples whose verdict flipped: right to wrong or "
                                                                "wrong to right")
    not_scorable: list[Flip] = Field(default_factory=list, description="Samples scored before that no answer "
                                     "scores now (their answer key gives no answer among the options)")
    scorable_now: list[Flip] = Field(default_factory=list, description="Samples scored neither right nor wrong "
                                     "before that are scored now")
    written: bool = Field(description="False when the folder already held this very re-scoring")

    def counts(self) -> dict[str, int]:
        """What changed, counted (`run.json`'s `flips`): verdicts flipped each way, samples that lost or gained a
        verdict, questions whose target changed or that have no answer now."""
        return {"right_to_wrong": sum(1 for f in self.flips if f.old_correct),
                "wrong_to_right": sum(1 for f in self.flips if not f.old_correct),
                "not_scorable": len(self.not_scorable), "scorable_now": len(self.scorable_now),
                "targets_changed": self.targets_changed, "no_answer": self.no_answer}

    def changed(self) -> list[Flip]:
        """Every sample whose verdict changed: the flips, then those with no verdict now, then those with one
        again (each in question, model and sample order)."""
        return [*self.flips, *self.not_scorable, *self.scorable_now]

    def summary(self) -> str:
        c = self.counts()
        when = f"as known at {self.known_at}" if self.known_at else "as known now"
        again = f", {c['scorable_now']:,} samples scorable again" if c["scorable_now"] else ""
        return (f"{self.questions:,} questions, {self.keys:,} answer keys re-run {when}: {self.targets_changed:,} "
                f"targets changed, {self.no_answer:,} questions without an answer now; {self.samples:,} samples "
                f"re-scored, {len(self.flips):,} verdicts flipped ({c['right_to_wrong']:,} right to wrong, "
                f"{c['wrong_to_right']:,} wrong to right); {c['not_scorable']:,} samples not scorable now{again}")


def rescored_id(old: str, content: str, snapshot: str | None, known_at: dt.date | None) -> str:
    """The same answers (`content`: a hash of the run's samples and questions) re-scored on the same store
    snapshot, as known on the same day, are the same run."""
    what = json.dumps({"rescored_from": old, "content": content, "snapshot": snapshot,
                       "known_at": str(known_at) if known_at else None}, sort_keys=True)
    return "run-" + hashlib.sha256(what.encode()).hexdigest()[:12]


def new_targets(store: GraphStore, questions: Sequence[Question], known_at: dt.date | None
                ) -> tuple[list[Question], int]:
    """Each question with its answer key re-run (once per distinct key) and the target that evidence gives;
    the number of keys run. As `bench verify` reads a key: evidence equal to the key's own (its hash) leaves the
    question's target as it is (a family's reading of the evidence is not always the released key), and only
    changed evidence is read again. `known_at` needs every key's query to take it (else one error naming them)."""
    queries = all_queries()
    if known_at is not None:
        lacking = sorted({q.answer_key.query for q in questions
                          if "known_at" not in queries.get(q.answer_key.query).params.model_fields})
        if lacking:
            raise ChronoKGError(f"--known-at: the answer keys {', '.join(lacking)} cannot be asked as known on a "
                                "past day; re-score these questions as known now (without --known-at)")
    cache: dict[str, list[dict[str, Any]]] = {}
    out = []
    for q in questions:
        key = q.answer_key
        params = {**key.params, **({"known_at": known_at.isoformat()} if known_at is not None else {})}
        memo = key.query + json.dumps(params, sort_keys=True, default=str)
        if memo not in cache:
            cache[memo] = [r.model_dump(mode="json") for r in queries.get(key.query).run(store, params)]
        evidence = cache[memo]
        family = FAMILIES.get(q.family) if q.family in FAMILIES else None
        if family is None or family.answer is None:
            raise ChronoKGError(f"question {q.id}: family {q.family!r} has no answer reader; its questions cannot "
                                "be re-scored")
        if evidence and evidence_hash(evidence) == key.evidence_hash:
            out.append(q.model_copy(update={"metadata": {**q.metadata, "rescored_target": q.target}}))
            continue
        target = family.answer(q, evidence) if evidence else None  # no evidence is no answer, not a "no"
        new_key = AnswerKey(query=key.query, params=key.params, evidence=evidence,
                            evidence_hash=evidence_hash(evidence), answer=answer_text(q, target))
        # a question with no answer now keeps its old target in the file (a Question needs one); its samples
        # are scored None (unscorable), and the flip list says so
        out.append(q.model_copy(update={"target": target if target is not None else q.target,
                                        "answer_key": new_key, "metadata": {**q.metadata, "rescored_target": target}}))
    if cache and not any(cache.values()):
        raise ChronoKGError("every answer key came back empty: this store holds none of the run's evidence (open "
                            "the store the run's questions were generated from)")
    return out, len(cache)


def first_release(store: GraphStore) -> dt.date | None:
    """The earliest release date of the releases the store holds (None: none dated)."""
    rows = store.run("MATCH (s:Source) WHERE s.release_date IS NOT NULL RETURN min(s.release_date) AS first")
    first = rows[0]["first"] if rows else None
    if first is None:
        return None
    return first if isinstance(first, dt.date) else dt.date.fromisoformat(str(first)[:10])


def check_known_at(store: GraphStore, known_at: dt.date | None) -> None:
    """A day before the store's first release knows nothing of it: every answer would be "not scorable"."""
    if known_at is None:
        return
    first = first_release(store)
    if first is not None and known_at < first:
        raise ChronoKGError(f"--known-at {known_at} is before this store's first release ({first}): nothing was "
                            "known then; give a day on or after it")


def answer_text(q: Question, target: str | None) -> str | None:
    """The option's text for a choice label; an open question's target is its own text."""
    return next((c.text for c in q.choices if c.label == target), target)


def check_out(folder: Path, out: Path) -> None:
    """The new run goes beside the old one, never into it (a run folder holds one run)."""
    run, target = folder.resolve(), out.resolve()
    if target == run or run in target.parents:
        raise ChronoKGError(f"--out {out} is the run folder or inside the run {folder}: give a folder outside it "
                            "(the re-scored run is a run of its own)")


def rescore(folder: Path, out: Path, store: GraphStore, snapshot: str | None, known_at: dt.date | None = None
            ) -> Rescored:
    """Write `out/<run id>` (run.json, samples.jsonl, questions.jsonl, flips.json, not_scorable.json,
    scorable_now.json), built whole in a temporary
    folder of its own and renamed into place; an existing folder of this very re-scoring is left as it is (so
    is one a concurrent identical re-scoring finished first)."""
    info = read_info(folder)
    try:
        options = RunOptions.model_validate(info.options)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(folder / "run.json", None, f"options.{'.'.join(map(str, first['loc']))}: "
                                                    f"{first['msg']}") from None
    samples_file = folder / "samples.jsonl"
    if not samples_file.is_file():
        raise InputError(folder, None, "no samples.jsonl: the run has no answers to re-score")
    check_out(folder, out)
    out = out.resolve()
    if options.judge:
        raise ChronoKGError(f"run {info.run_id} was scored by a judge model: re-scoring it would ask the judge again")
    records = latest(samples_file)
    if not records:
        raise InputError(samples_file, None, "holds no sample records: the run has no answers to re-score")
    check_known_at(store, known_at)
    old_questions = load_questions(check_files(info), options.limit)
    questions, keys = new_targets(store, old_questions, known_at)
    by_id = {q.id: q for q in questions}
    old_by_id = {q.id: q for q in old_questions}
    content = hashlib.sha256(samples_file.read_bytes()
                             + "".join(q["sha256"] for q in info.questions).encode()).hexdigest()
    rid = rescored_id(info.run_id, content, snapshot, known_at)
    target = out / rid
    changes: dict[str, list[Flip]] = {"flips": [], "not_scorable": [], "scorable_now": []}
    lines: list[SampleRecord] = []
    for unit in sorted(records):
        r = records[unit]
        q = by_id.get(r.question_id)
        if not r.ok or q is None:
            lines.append(r)
            continue
        gone = q.metadata.get("rescored_target") is None
        if gone:  # scored neither right nor wrong: a failed sample, which no metric counts
            correct = None
            when = f"as known at {known_at}" if known_at else "now"
            lines.append(r.model_copy(update={"correct": None, "score": None, "error": "not scorable: its answer "
                                              f"key gives no answer among the options {when}"}))
        else:
            correct, score, fields = profile_for(q.family).score(q, r.answer, info.protocol)
            lines.append(r.model_copy(update={"correct": correct, "score": score, "fields": fields}))
        if correct != r.correct:
            old = old_by_id[r.question_id]
            kind = "not_scorable" if correct is None else "scorable_now" if r.correct is None else "flips"
            changes[kind].append(Flip(
                question_id=r.question_id, model=r.model, sample=r.sample, family=r.family, variant=r.variant,
                answer=r.answer, old_correct=r.correct, new_correct=correct, old_target=old.target,
                new_target=None if gone else q.target, old_answer=answer_text(old, old.target),
                new_answer=None if gone else answer_text(q, q.target)))
    result = Rescored(
        run_id=rid, folder=str(target), rescored_from=info.run_id, known_at=known_at, snapshot=snapshot,
        questions=len(questions), keys=keys,
        targets_changed=sum(1 for q in questions
                            if q.metadata.get("rescored_target") not in (None, old_by_id[q.id].target)),
        no_answer=sum(1 for q in questions if q.metadata.get("rescored_target") is None),
        samples=sum(1 for r in records.values() if r.ok and r.question_id in by_id), written=False, **changes)
    if (target / "run.json").is_file():
        return result
    origin = {"store": StoreURI.parse(store.uri).redacted(), "rescored_from_path": str(folder.resolve())}
    written = _write(target, info, rid, questions, lines, result, origin)
    return result.model_copy(update={"written": written})


def _write(target: Path, info: RunInfo, rid: str, questions: Sequence[Question], lines: Sequence[SampleRecord],
           result: Rescored, origin: dict[str, str]) -> bool:
    """Build the folder in a temporary folder of this process's own beside `target` and rename it into place;
    False when an identical re-scoring finished first (its folder is kept, this one removed)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    for left in target.parent.glob(f".{target.name}.*.part"):  # of a re-scoring killed while writing
        if not _alive(left.name.split(".")[-3]):
            shutil.rmtree(left, ignore_errors=True)
    part = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.part"
    part.mkdir()
    try:
        write_jsonl(part / QUESTIONS, questions)
        (part / "samples.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in lines), encoding="utf-8")
        for name, rows in ((FLIPS, result.flips), (NOT_SCORABLE, result.not_scorable),
                           (SCORABLE_NOW, result.scorable_now)):
            (part / name).write_text(json.dumps([f.model_dump(mode="json") for f in rows], indent=2,
                                                ensure_ascii=False) + "\n", encoding="utf-8")
        ok = [r for r in lines if r.ok]
        totals = {**info.totals, "samples": len(ok), "failed": len(lines) - len(ok),
                  "correct": sum(1 for r in ok if r.correct)}
        new = info.model_copy(update={
            "run_id": rid, "totals": totals,
            "questions": [{"path": str(target / QUESTIONS), "sha256": file_hash(part / QUESTIONS)}],
            "snapshot": result.snapshot, "status": "rescored", "rescored_from": info.run_id,
            "known_at": result.known_at.isoformat() if result.known_at else None, "flips": result.counts(),
            **origin})
        write_info(part, new)
        try:
            part.rename(target)
        except OSError:
            if (target / "run.json").is_file():  # the same re-scoring, finished by another process first
                shutil.rmtree(part, ignore_errors=True)
                return False
            raise
        return True
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise


def _alive(pid: str) -> bool:
    """Whether the process that named a temporary folder still runs (a name that is no pid: treated as alive)."""
    if not pid.isdigit():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

"""An item's dates, defined once for every route that carries them to another harness (the Hugging Face dataset's
columns, inspect's sample metadata, lm-eval's docs), so a split by any of them puts the same items on each side as
chronokg's own cutoff split (`chronokg.metrics.cutoff`):

- `question_date`: the date the question asks about (its `target_date`, else its answer key's `date` parameter);
- `gold_valid_from`, `gold_valid_to`: the valid time of the gold answer: with the store's fact dates, the span of
  the gold facts (those of the evidence rows stating the answer; where none does, e.g. MI-CXR's summaries, every
  fact the question tests), else the span the same evidence rows record. Where the family's profile dates its gold
  answers (`Profile.dated_gold`), the start is the `gold_from` its scoring gives the gold answer itself, what the
  cutoff split reads (none: no dates); a recommendation restated unchanged by a later version stays valid to the
  later one's end. An empty end is a fact still in force, an empty start one whose start the source does not give
  (any gold fact without one leaves it empty);
- `evidence_known_from`: when the store first knew all of the question's evidence: the latest `known_from` of the
  facts it tests, read from the store; without one, the latest the evidence rows record.

A question whose facts the given store does not all hold is dated from its evidence rows, as without a store.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chronokg.bench.hf_card import DATES
from chronokg.bench.question import Question
from chronokg.eval.profile import PROFILES, profile_for
from chronokg.graph.store import GraphStore

if TYPE_CHECKING:
    from chronokg.bench.hf import DatedBy

# The names, declared with the dataset's columns (the bench layer, below this one, writes them).
DATE_FIELDS: tuple[str, ...] = DATES
# The gold answer's valid time does not depend on the protocol a model is asked under.
PROTOCOL = "seed"
_STATING = ("text", "caption", "value", "object_caption")

Dates = dict[str, dt.date | None]
Facts = Mapping[str, Mapping[str, Any]]  # fact id -> {valid_from, valid_to, known_from}


def day(value: Any) -> dt.date | None:
    """A date as the engines and the evidence rows give one (a date, a datetime, an ISO text), or None."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def gold_rows(question: Question) -> list[dict[str, Any]]:
    """The answer key's evidence rows stating its answer (text, caption, value, object caption or an alias)."""
    answer = question.answer_key.answer
    if answer is None:
        return []
    out = []
    for row in question.answer_key.evidence:
        if not isinstance(row, dict) or not row.get("fact_id"):
            continue
        said = [*(row.get(k) for k in _STATING), *(row.get("aliases") or [])]
        if answer in {str(s) for s in said if s is not None}:
            out.append(row)
    return out


def gold_fact_ids(question: Question) -> list[str]:
    """The facts stating the gold answer; where no evidence row states it, every fact the question tests."""
    return sorted({str(r["fact_id"]) for r in gold_rows(question)}) or sorted(set(question.facts))


def needed_fact_ids(questions: Iterable[Question]) -> list[str]:
    """Every fact whose dates the questions' dates read from a store: the facts each tests and its gold facts."""
    return sorted({i for q in questions for i in (*q.facts, *gold_fact_ids(q))})


def fact_dates(store: GraphStore, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The valid and known-from dates of the facts `ids` the store holds, by id, in one query."""
    rows = store.run("MATCH (f:Fact) WHERE f.id IN $ids RETURN f.id AS id, f.valid_from AS valid_from, "
                     "f.valid_to AS valid_to, f.known_from AS known_from ORDER BY id", {"ids": sorted(set(ids))})
    return {str(r["id"]): r for r in rows}


def missing_facts(question: Question, facts: Facts) -> list[str]:
    """The facts the question's dates read that `facts` lacks."""
    return sorted({*question.facts, *gold_fact_ids(question)} - set(facts))


def _span(rows: Sequence[Mapping[str, Any]]) -> tuple[dt.date | None, dt.date | None]:
    """The earliest start and latest end of `rows` (empty where one of them has none)."""
    starts, ends = [day(r.get("valid_from")) for r in rows], [day(r.get("valid_to")) for r in rows]
    return (None if not rows or None in starts else min(d for d in starts if d),
            None if not rows or None in ends else max(d for d in ends if d))


def item_dates(question: Question, facts: Facts | None = None) -> Dates:
    """The item's four dates (`DATE_FIELDS`), from the store's fact dates `facts` (by id) where given and holding
    every fact the question reads, else from its answer key's evidence rows."""
    when = question.target_date
    if when is None and isinstance(question.answer_key.params.get("date"), str):
        when = day(question.answer_key.params["date"])
    stored = facts if facts is not None and not missing_facts(question, facts) else None
    if stored is not None:
        gold = _span([stored[i] for i in gold_fact_ids(question)])
    else:
        tested = set(question.facts)
        gold = _span(gold_rows(question) or [r for r in question.answer_key.evidence
                                             if isinstance(r, dict) and r.get("fact_id") in tested])
    profile = profile_for(question.family) if question.family in PROFILES else None  # none: no dated gold declared
    if profile is not None and profile.dated_gold:  # the start the cutoff split reads; the end as above
        _, _, fields = profile.score(question, question.target, PROTOCOL)  # the gold answer's own fact chosen
        start = day(fields.get("gold_from"))
        gold = (start, gold[1] if start else None)
    if stored is not None:
        known = [day(stored[i]["known_from"]) for i in (question.facts or gold_fact_ids(question))]
    else:
        known = [day(r.get("known_from")) for r in question.answer_key.evidence if isinstance(r, dict)]
    stamps = [k for k in known if k]
    return {"question_date": when, "gold_valid_from": gold[0], "gold_valid_to": gold[1],
            "evidence_known_from": max(stamps) if stamps else None}


def iso(dates: Mapping[str, dt.date | None]) -> dict[str, str | None]:
    """The dates as ISO days (None: unknown), for JSON (inspect's metadata, lm-eval's docs)."""
    return {k: v.isoformat() if v else None for k, v in dates.items()}


def store_dates(store: GraphStore, questions: Sequence[Question]) -> DatedBy:
    """The questions' fact dates read with one query of `store`; gives a question's dates and the facts it reads
    that the store lacks (what `chronokg.bench.hf.export_hf` takes as `dates`)."""
    facts = fact_dates(store, needed_fact_ids(questions))
    return lambda q: (item_dates(q, facts), missing_facts(q, facts))


def stored_facts(uri: str | None, questions: Sequence[Question],
                 required: bool = True) -> dict[str, dict[str, Any]] | None:
    """The fact dates the questions read, from the store `uri` (which must exist when `required`), else from the
    settings' store where there is one; None where there is none (the dates then come from the evidence rows)."""
    from chronokg.errors import ChronoKGError, StoreError
    from chronokg.graph.open import open_store
    from chronokg.settings import Settings
    from chronokg.store_uri import StoreURI

    settings = Settings()
    file = StoreURI.parse(uri or settings.store).file
    if file is not None and not Path(file).exists():
        if uri and required:
            raise ChronoKGError(f"store {StoreURI.parse(uri).redacted()}: no such store file")
        return None
    try:
        with open_store(uri, settings, read_only=True) as store:
            return fact_dates(store, needed_fact_ids(questions))
    except StoreError:
        if required:
            raise
        return None  # a run's store no longer reachable: its items dated from their evidence rows

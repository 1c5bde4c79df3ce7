"""Benchmark-aging QA sets ("When Benchmarks Age"): gold answers as known at each benchmark's release.

SelfAware (JSON), TruthfulQA (CSV), TriviaQA (`{"Data": [...]}` JSON),
NaturalQuestions (NQ-open `{"question", "answer": [...]}` or simplified
`{"question_text", "annotations", ...}` JSONL) and BoolQ (JSONL).

Each question is an Entity (`<benchmark>:<id>`: the dataset's own id where it
has one, else a hash of the question text) with its text kept as a
SourceQuestion (benchmark, record, question, accepted answers, answerable; a
`time_sensitive` property is declared for a detector to fill later and is
null at load; `set_time_sensitive` records a verdict with its method and
votes). Its gold answer is one `gold_answer` fact per question: the value is
the first (or TruthfulQA's best) answer and every accepted answer is kept,
JSON-encoded, in `accepted_answers`. Valid time is unknown (the benchmark never
says since when the answer holds): `valid_from`/`valid_to` are None; known
time starts at the benchmark's release (month precision). Unanswerable
questions (SelfAware's null answers, NQ questions without a short answer) keep
their SourceQuestion with `answerable=false` and get no gold fact.

`add_updated_answer` records a later answer bitemporally; see its docstring.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.model import Fact, Source, stable_id
from chronokg.graph.store import GraphStore, Statement
from chronokg.graph.writer import merge_statements
from chronokg.ingest.common import (
    LoadSummary,
    RecordKeys,
    Text,
    apply,
    caption,
    expand_paths,
    file_source,
    read_csv_records,
    read_json,
    read_jsonl,
    slug,
    today,
    validated,
)
from chronokg.progress import Progress

# Characters in one field of a question record (README, "Input limits"): questions and answers are short.
MAX_TEXT = 20_000
GOLD = "gold_answer"
UPDATE_KIND = "qa_update"
QUESTION_KIND = "question"

class Benchmark(StrEnum):
    SELFAWARE = "selfaware"
    TRUTHFULQA = "truthfulqa"
    TRIVIAQA = "triviaqa"
    NQ = "nq"
    BOOLQ = "boolq"


# Public release of each benchmark (month precision): the known time of its gold answers.
RELEASES: Mapping[Benchmark, dt.date] = {
    Benchmark.TRIVIAQA: dt.date(2017, 7, 1),
    Benchmark.BOOLQ: dt.date(2019, 5, 1),
    Benchmark.NQ: dt.date(2019, 7, 1),
    Benchmark.TRUTHFULQA: dt.date(2022, 5, 1),
    Benchmark.SELFAWARE: dt.date(2023, 7, 1),
}
CAPTIONS: Mapping[Benchmark, str] = {
    Benchmark.SELFAWARE: "SelfAware", Benchmark.TRUTHFULQA: "TruthfulQA", Benchmark.TRIVIAQA: "TriviaQA",
    Benchmark.NQ: "NaturalQuestions", Benchmark.BOOLQ: "BoolQ",
}


# --- input schemas ---------------------------------------------------------------------


class SelfAwareRecord(BaseModel):
    model_config = ConfigDict(extra="allow")

    question_id: int | str
    question: Text
    answer: list[Text] | None
    answerable: StrictBool
    source: str | None = None


class TruthfulRow(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    question: Text = Field(alias="Question")
    best_answer: Text = Field(alias="Best Answer")
    # TruthfulQA's two question types (paper §2.1; the released CSV's `Type` column): a typo would split the
    # per-type scores. `Category` (38 topics, renamed between releases) is free text by design.
    question_type: Literal["Adversarial", "Non-Adversarial"] | None = Field(default=None, alias="Type")
    category: str | None = Field(default=None, alias="Category")
    correct_answers: str = Field(default="", alias="Correct Answers")
    incorrect_answers: str = Field(default="", alias="Incorrect Answers")
    reference: str | None = Field(default=None, alias="Source")

    @field_validator("question_type", mode="before")
    @classmethod
    def _empty_type(cls, value: Any) -> Any:
        return None if value == "" else value


class TriviaAnswer(BaseModel):
    model_config = ConfigDict(extra="allow")

    Value: Text
    Aliases: list[str] = Field(default_factory=list)


class TriviaEntry(BaseModel):
    model_config = ConfigDict(extra="allow")

    Question: Text
    QuestionId: Text
    Answer: TriviaAnswer
    QuestionSource: str | None = None


class NQOpen(BaseModel):
    model_config = ConfigDict(extra="allow")

    question: Text
    answer: list[Text] = Field(min_length=1)
    id: str | int | None = None


class NQSpan(BaseModel):
    model_config = ConfigDict(extra="allow")

    start_token: int = Field(ge=0)
    end_token: int = Field(ge=0)


class NQAnnotation(BaseModel):
    model_config = ConfigDict(extra="allow")

    short_answers: list[NQSpan] = Field(default_factory=list)
    # NQ's three values: an unknown one ("yes", "MAYBE") would silently make the question unanswerable.
    yes_no_answer: Literal["NONE", "YES", "NO"] = "NONE"


class NQSimplified(BaseModel):
    model_config = ConfigDict(extra="allow")

    example_id: int | str
    question_text: Text
    document_text: str = ""
    document_url: str | None = None
    annotations: list[NQAnnotation] = Field(default_factory=list)


class BoolQRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    question: Text
    answer: StrictBool
    passage: str | None = None
    title: str | None = None  # BoolQ's field; stored as `passage_title` (kglite reserves `title`)


@dataclass
class Question:
    """One question, normalised across benchmarks."""

    qid: str
    record: str | int
    question: str
    answers: list[str | bool]
    answerable: bool
    extra: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # the record as error messages name it ("example 3 (question_id 17)")

    @property
    def locator(self) -> str | int:
        return self.where or self.record


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(v.strip() for v in values if v.strip()))


def text_id(benchmark: Benchmark, *parts: str) -> str:
    """The id of a question the dataset gives no id: a hash of its (whitespace-normalised) text."""
    return f"{benchmark.value}:{stable_id(*(' '.join(p.split()) for p in parts))}"


# --- one reader per benchmark ------------------------------------------------------------


def _selfaware(path: Path, data: Any) -> Iterator[Question]:
    if not isinstance(data, dict) or not isinstance(data.get("example"), list):
        raise InputError(path, None, "expected SelfAware's object with an 'example' list")
    for n, obj in enumerate(data["example"], start=1):
        record = f"example {n}" + (f" (question_id {obj.get('question_id')})" if isinstance(obj, dict) else "")
        rec: SelfAwareRecord = validated(SelfAwareRecord, obj, path, record)
        if rec.answerable and not rec.answer:
            raise InputError(path, record, "answerable question without an answer")
        if not rec.answerable and rec.answer:
            raise InputError(path, record, "unanswerable question with an answer")
        yield Question(qid=f"selfaware:{rec.question_id}", record=rec.question_id, question=rec.question,
                       answers=list(_unique(rec.answer or [])), answerable=rec.answerable,
                       extra={"origin": rec.source}, where=record)


def _truthfulqa(path: Path) -> Iterator[Question]:
    # The released TruthfulQA.csv ends without a line break; a cut inside a quoted field is still refused.
    for n, (record, raw) in enumerate(read_csv_records(path, line_end_optional=True, max_text=MAX_TEXT), start=1):
        row: TruthfulRow = validated(TruthfulRow, raw, path, record)
        correct = _unique(row.correct_answers.split("; "))
        yield Question(
            qid=text_id(Benchmark.TRUTHFULQA, row.question), record=n, question=row.question,
            answers=list(_unique([row.best_answer, *correct])), answerable=True,
            extra={"category": row.category, "question_type": row.question_type, "correct_answers": correct,
                   "incorrect_answers": _unique(row.incorrect_answers.split("; ")), "reference": row.reference},
            where=record,
        )


def _triviaqa(path: Path, data: Any) -> Iterator[Question]:
    if not isinstance(data, dict) or not isinstance(data.get("Data"), list):
        raise InputError(path, None, "expected TriviaQA's object with a 'Data' list")
    for n, obj in enumerate(data["Data"], start=1):
        record = f"Data {n}" + (f" (QuestionId {obj.get('QuestionId')})" if isinstance(obj, dict) else "")
        e: TriviaEntry = validated(TriviaEntry, obj, path, record)
        yield Question(qid=f"triviaqa:{e.QuestionId}", record=e.QuestionId, question=e.Question,
                       answers=list(_unique([e.Answer.Value, *e.Answer.Aliases])), answerable=True,
                       extra={"reference": e.QuestionSource}, where=record)


def _nq(path: Path) -> Iterator[Question]:
    for line, obj in read_jsonl(path, MAX_TEXT):
        record = f"line {line}"
        if "question_text" in obj:
            s: NQSimplified = validated(NQSimplified, obj, path, record)
            tokens = s.document_text.split(" ")
            answers: list[str] = []
            for a in s.annotations:
                for span in a.short_answers:
                    if span.end_token > len(tokens) or span.start_token >= span.end_token:
                        raise InputError(path, record, f"short answer tokens {span.start_token}..{span.end_token} "
                                                       f"outside the document ({len(tokens)} tokens)")
                    answers.append(" ".join(tokens[span.start_token:span.end_token]))
                if a.yes_no_answer in {"YES", "NO"}:
                    answers.append(a.yes_no_answer.lower())
            found = _unique(answers)
            yield Question(qid=f"nq:{s.example_id}", record=str(s.example_id), question=s.question_text,
                           answers=list(found), answerable=bool(found), extra={"document_url": s.document_url},
                           where=record)
        else:
            o: NQOpen = validated(NQOpen, obj, path, record)
            qid = f"nq:{o.id}" if o.id is not None else text_id(Benchmark.NQ, o.question)
            yield Question(qid=qid, record=line if o.id is None else str(o.id), question=o.question,
                           answers=list(_unique(o.answer)), answerable=True, where=record)


def _boolq(path: Path) -> Iterator[Question]:
    for line, obj in read_jsonl(path, MAX_TEXT):
        b: BoolQRow = validated(BoolQRow, obj, path, f"line {line}")
        yield Question(qid=text_id(Benchmark.BOOLQ, b.question, b.title or ""), record=line, question=b.question,
                       answers=[b.answer], answerable=True,
                       extra={"passage": b.passage, "passage_title": b.title}, where=f"line {line}")


def detect(path: Path, data: Any = None) -> Benchmark:
    """Which benchmark a file is, from its format and fields."""
    if path.suffix == ".csv":
        try:
            with path.open(encoding="utf-8-sig", newline="") as fh:
                header = next(csv.reader(fh), [])
        except (UnicodeDecodeError, csv.Error) as exc:
            raise InputError(path, "line 1", f"unreadable CSV header: {exc}") from exc
        if "Question" in header:  # the only CSV benchmark; its other columns are checked row by row
            return Benchmark.TRUTHFULQA
    elif isinstance(data, dict):
        if "Data" in data:
            return Benchmark.TRIVIAQA
        if "example" in data:
            return Benchmark.SELFAWARE
    elif path.suffix in {".jsonl", ".jsonlines"}:
        for _line, obj in read_jsonl(path, MAX_TEXT):
            if "passage" in obj or isinstance(obj.get("answer"), bool):
                return Benchmark.BOOLQ
            if "question_text" in obj or "question" in obj:
                return Benchmark.NQ
            break
    raise InputError(path, None, "cannot tell which benchmark this is: pass --benchmark "
                                 f"({', '.join(b.value for b in Benchmark)})")


def read_questions(path: Path, benchmark: Benchmark | None = None) -> tuple[Benchmark, Iterator[Question]]:
    """The benchmark of `path` (detected unless given) and its questions."""
    data = read_json(path, MAX_TEXT) if benchmark is None and path.suffix == ".json" else None
    bench = benchmark or detect(path, data)
    if bench in {Benchmark.SELFAWARE, Benchmark.TRIVIAQA}:
        if data is None:
            data = read_json(path, MAX_TEXT)
        return bench, (_selfaware(path, data) if bench is Benchmark.SELFAWARE else _triviaqa(path, data))
    if bench is Benchmark.TRUTHFULQA:
        return bench, _truthfulqa(path)
    return bench, (_nq(path) if bench is Benchmark.NQ else _boolq(path))


class QABuilder:
    """Stages QA benchmark files into one batch."""

    def __init__(self, release_date: dt.date | None = None) -> None:
        self.batch = GraphBatch()
        self.release_date = release_date
        self.records = 0
        self.benchmarks: set[Benchmark] = set()
        self.keys = RecordKeys("question id")

    def file(self, path: Path, benchmark: Benchmark | None) -> None:
        bench, questions = read_questions(path, benchmark)
        release = self.release_date or RELEASES[bench]
        src = file_source(path, bench.value, release, prefix=CAPTIONS[bench])
        self.batch.source(src)
        count = 0
        for q in questions:
            self.batch.at(path, q.locator)
            self.keys.check(q.qid, [q.question, q.answers, q.answerable], path, q.locator)
            self.question(bench, q, src)
            count += 1
        if count == 0:
            raise InputError(path, None, "no questions")
        self.records += count
        self.benchmarks.add(bench)

    def question(self, bench: Benchmark, q: Question, src: Source) -> None:
        self.batch.entity(q.qid, kind=QUESTION_KIND, caption=caption(q.question))
        sq = f"sq:{q.qid}"
        texts = [a for a in q.answers if isinstance(a, str)]
        self.batch.node(schema.SOURCE_QUESTION, sq, benchmark=bench.value, record=q.record, question=q.question,
                        answerable=q.answerable, answers=texts or None, **q.extra)
        self.batch.edge(schema.ABOUT, schema.SOURCE_QUESTION, sq, schema.ENTITY, q.qid)
        self.batch.edge(schema.LOADED_FROM, schema.SOURCE_QUESTION, sq, schema.SOURCE, src.id)
        if not q.answerable or not q.answers:
            return
        attrs: dict[str, Any] = {"benchmark": bench.value}
        if len(q.answers) > 1:
            attrs["accepted_answers"] = json.dumps(q.answers, ensure_ascii=False)
        self.batch.fact(Fact(
            subject=q.qid, predicate=GOLD, value=q.answers[0], precision=Precision.MONTH,
            known_from=src.release_date, source_id=src.id, source_kind=bench.value, attrs=attrs,
        ), subject_kind=QUESTION_KIND)


def expand(paths: Iterable[Path]) -> list[Path]:
    return expand_paths(paths, lambda p: p.suffix in {".json", ".jsonl", ".csv"}, "QA files (.json, .jsonl, .csv)")


def stage(paths: Iterable[Path], benchmark: Benchmark | None = None,
          release_date: dt.date | None = None) -> tuple[GraphBatch, int, list[Path], set[Benchmark]]:
    """Parse and validate every file into one batch (nothing is written)."""
    files = expand(paths)
    builder = QABuilder(release_date)
    for f in files:
        builder.file(f, benchmark)
    return builder.batch, builder.records, files, builder.benchmarks


def load(store: GraphStore, paths: Iterable[Path], benchmark: Benchmark | None = None,
         release_date: dt.date | None = None, progress: Progress | None = None) -> LoadSummary:
    """Load QA benchmark files in one transaction; bad input raises `InputError` and writes nothing.

    `release_date` overrides the benchmark's own release as the known time.
    """
    batch, records, files, benches = stage(paths, benchmark, release_date)
    return apply(store, batch, "+".join(sorted(b.value for b in benches)), files, records, progress)


VERDICT_PROPERTIES = ("time_sensitive_by", "time_sensitive_votes")


def set_time_sensitive(store: GraphStore, flags: Mapping[str, bool | None], method: str | None = None,
                       votes: Mapping[str, Sequence[int]] | None = None) -> int:
    """Record a detector's verdicts (question id -> time-sensitive?); returns how many questions matched.

    `method` says how they were reached (kept as `time_sensitive_by`, e.g. "keywords/v1" or
    "llm/<model>/3 votes") and `votes` the [yes, no] votes per question (`time_sensitive_votes`), so a
    verdict can be audited later; a verdict set without them clears the earlier ones.
    """
    votes = votes or {}
    rows = [{"id": f"sq:{qid}", "flag": flag, "by": method, "votes": list(votes[qid]) if qid in votes else None}
            for qid, flag in flags.items()]
    found = store.run("UNWIND $ids AS id MATCH (q:SourceQuestion {id: id}) RETURN count(q) AS n",
                      {"ids": [r["id"] for r in rows]})
    store.declare_properties(schema.SOURCE_QUESTION, VERDICT_PROPERTIES)
    store.write([("UNWIND $rows AS r MATCH (q:SourceQuestion {id: r.id}) SET q.time_sensitive = r.flag, "
                  "q.time_sensitive_by = r.by, q.time_sensitive_votes = r.votes", {"rows": rows})])
    return int(found[0]["n"]) if found else 0


# --- later answers ---------------------------------------------------------------------------


class AnswerUpdate(BaseModel):
    """What `add_updated_answer` did."""

    question_id: str
    changed: bool
    new_fact: str | None = None
    retracted: list[str] = Field(default_factory=list)
    closed: list[str] = Field(default_factory=list)


def _valid_at(row: Mapping[str, Any], day: dt.date) -> bool:
    return (row["valid_from"] is None or row["valid_from"] <= day) and (row["valid_to"] is None
                                                                        or row["valid_to"] > day)


def add_updated_answer(
    store: GraphStore, question_id: str, answer: str | bool, as_of: dt.date, source: str | Source = "manual",
    known_from: dt.date | None = None, precision: Precision = Precision.DAY,
) -> AnswerUpdate:
    """Record that from `as_of` the answer to `question_id` is `answer`, bitemporally.

    The gold answer(s) valid at `as_of` are not edited: each is retracted
    (`known_to` = `known_from`) and re-asserted by the update source with its
    validity closed at `as_of`; the new answer is asserted valid from `as_of`,
    open-ended. Known time of the update is `known_from` (default: today). So
    as of now, dates before `as_of` answer with the old gold answer and later
    dates with the new one; as known before the update (`known_at`), the old
    answer still holds everywhere. One transaction; repeating an update (the
    answer already holds at `as_of`) changes nothing.
    """
    known = known_from or today()
    if not store.run("MATCH (e:Entity {id: $id}) RETURN e.id AS id", {"id": question_id}):
        raise InputError(store.uri, question_id, "no such question in the store")
    rows = store.run(
        "MATCH (f:Fact) WHERE f.subject_id = $q AND f.predicate = $p AND f.known_to IS NULL "
        "RETURN f.id AS id, f.value AS value, f.valid_from AS valid_from, f.valid_to AS valid_to, "
        "f.precision AS precision, f.known_from AS known_from, f.benchmark AS benchmark, "
        "f.accepted_answers AS accepted_answers ORDER BY id",
        {"q": question_id, "p": GOLD},
    )
    later = [r for r in rows if r["valid_from"] is not None and r["valid_from"] > as_of]
    if later:
        raise InputError(store.uri, question_id, f"an answer valid from {later[0]['valid_from']} is already "
                                                 f"recorded; add updates in valid-time order")
    current = [r for r in rows if _valid_at(r, as_of)]
    if any(r["value"] == answer for r in current):
        return AnswerUpdate(question_id=question_id, changed=False)
    for r in current:
        if r["known_from"] is not None and known < r["known_from"]:
            raise InputError(store.uri, question_id, f"the update is known from {known}, before the answer it "
                                                     f"replaces was known ({r['known_from']})")
    if isinstance(source, str):
        name = slug(source) or stable_id(source)
        source = Source(id=f"{UPDATE_KIND}:{name}:{known.isoformat()}", kind=UPDATE_KIND, caption=source,
                        release_date=known)
    batch = GraphBatch()
    batch.source(source)
    benchmark = next((r["benchmark"] for r in current if r["benchmark"]), question_id.split(":", 1)[0])
    closed = []
    for r in current:
        if r["valid_from"] is not None and r["valid_from"] >= as_of:
            continue  # it never held: retracting it is enough
        closed.append(batch.fact(Fact(
            subject=question_id, predicate=GOLD, value=r["value"], valid_from=r["valid_from"], valid_to=as_of,
            precision=Precision(r["precision"]), known_from=known, source_id=source.id, source_kind=UPDATE_KIND,
            attrs={"benchmark": r["benchmark"], "accepted_answers": r["accepted_answers"], "revises": r["id"]},
        ), subject_kind=QUESTION_KIND))
    new = batch.fact(Fact(
        subject=question_id, predicate=GOLD, value=answer, valid_from=as_of, precision=precision,
        known_from=known, source_id=source.id, source_kind=UPDATE_KIND,
        attrs={"benchmark": benchmark, "update_of": ",".join(r["id"] for r in current) or None},
    ), subject_kind=QUESTION_KIND)
    retracted = [r["id"] for r in current]
    statements: list[Statement] = [
        ("UNWIND $ids AS id MATCH (f:Fact {id: id}) SET f.known_to = $known", {"ids": retracted, "known": known}),
    ]
    statements += [statement for statement, _ in merge_statements(batch)]
    store.write(statements)
    return AnswerUpdate(question_id=question_id, changed=True, new_fact=new, retracted=retracted, closed=closed)

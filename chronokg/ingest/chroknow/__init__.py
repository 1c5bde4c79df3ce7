"""ChroKnowBench (dmis-lab/ChroKnowledge): yearly snapshots collapsed into validity intervals.

The benchmark gives, per (subject, relation), the objects of each yearly
snapshot (`objects_2010` ... with `release_date_2010` ...). Rows are
General (objects are alias lists: `[["Barack Obama", "Obama"], ...]`),
Biomedical (objects are strings), Legal (a cloze `question` with
`answers_YYYY`) or time-invariant (`{subject, relation, objects}`).

Consecutive snapshots holding the same object become one fact valid
`[first year, first later snapshot year without it)` at year precision; an
object still held in the last snapshot stays open-ended, and one held from the
first snapshot starts there (the benchmark says nothing earlier). Its known
time is the earliest release date among the snapshots asserting it. A row
whose object set never changes is marked `temporal_state=static`, otherwise
`dynamic`; time-invariant rows are `invariant` and carry no valid time.

Entities have no ids in ChroKnowBench: `ck:` + a slug of the text (a hash when
the slug is empty or long) with the text as caption and every alias kept in
`aliases`. A Legal question is the entity `ck:q-<hash of the question>` whose
`answer` facts carry the answer text. Each row is also kept as a
SourceQuestion (with its distractors, JSON-encoded) linked to its subject.

Byte-exact prompts (`chronokg generate chroknow --protocol seed`) need what the
facts merge away: each row's per-year object order and nesting, alias order,
distractor order, raw release dates and its place in its file. The
SourceQuestion therefore also keeps the row exactly as read (`row_json`), its
file's name, the seed's domain and split read from the file name
(`TimeVariant_General_Dynamic.jsonl` -> General, Dynamic), `subject_text`,
`relation` and the years it covers (a row loaded again from another file keeps
the latest file's reading: `POLICY`). The few-shot pools
(`Fewshots/Fewshot_{domain}.jsonl`, read from a given folder's `Fewshots/`
sub-folder or given as files) become SourceQuestion nodes with `fewshot=true`
and the same properties; they are prompt material, not assertions, so they add
no facts or entities.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision, parse_date, year_start
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import Fact, Source, stable_id
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import (
    LoadSummary,
    RecordKeys,
    Text,
    apply,
    caption,
    check_release,
    expand_paths,
    file_source,
    read_json_blocks,
    slug,
    validated,
)
from chronokg.progress import Progress

KIND = "chroknow"
ANSWER = "answer"
# Code and data were first published on 2024-10-11 (README "Updates"): the known
# time of time-invariant rows, which carry no release dates of their own.
DEFAULT_RELEASE = dt.date(2024, 10, 11)
# Characters in one string of a row (README, "Input limits"): objects, aliases and questions are short.
MAX_TEXT = 10_000
_YEAR_KEY = re.compile(r"^(objects|answers|release_date)_(\d{4})$")
_YEARISH_KEY = re.compile(r"^(objects|answers|release_date)_(.*)$", re.S)
_COMPACT_DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_ISO_PREFIX = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ]")
# The released file names: TimeVariant_{domain}_{Dynamic|Static}.jsonl, TimeInvariant_{domain}.jsonl and
# Fewshots/Fewshot_{domain}.jsonl (ChroKnowledge `sources/utils.py:53-68`).
_SEED_FILE = re.compile(r"^Time(?:Variant|Invariant)_([A-Za-z]+?)(?:_(Dynamic|Static))?\.jsonl$")
_FEWSHOT_FILE = re.compile(r"^Fewshot_([A-Za-z]+)\.jsonl$")
FEWSHOTS = "Fewshots"
SEED_DOMAIN_NAMES = ("General", "Biomedical", "Legal", "CommonSense", "Math")
# A row loaded again from another file (a re-release, other release dates): the row as read is that file's.
POLICY = DEFAULT_POLICY.with_latest(schema.SOURCE_QUESTION, "row_json", "file_name", "split", "years")

class Domain(StrEnum):
    GENERAL = "general"
    BIOMEDICAL = "biomedical"
    LEGAL = "legal"
    INVARIANT = "invariant"


class TripleRow(BaseModel):
    """General, Biomedical and time-invariant rows (year columns are read separately)."""

    model_config = ConfigDict(extra="allow")

    subject: Text
    relation: Text
    distractor: Any = None


class LegalRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    question: Text
    question_type: str | None = None
    distractor: Any = None


@dataclass(frozen=True)
class FileRole:
    """What a file's name says: a few-shot pool or benchmark rows, the seed's domain and split."""

    fewshot: bool
    seed_domain: str | None
    split: str | None


def file_role(path: Path) -> FileRole:
    """Read the seed's file naming; a few-shot file is one named `Fewshot_*.jsonl` or inside `Fewshots/`."""
    if m := _FEWSHOT_FILE.match(path.name):
        return FileRole(True, _known_domain(m[1]), None)
    if m := _SEED_FILE.match(path.name):
        return FileRole(path.parent.name == FEWSHOTS, _known_domain(m[1]), m[2])
    return FileRole(path.parent.name == FEWSHOTS, None, None)


def check_file_name(path: Path) -> None:
    """A file named as the seed names its files (`TimeVariant_`, `TimeInvariant_`, `Fewshot_`) must name one of
    its domains and, for time-variant rows, its Dynamic or Static split: the name is where the row's seed domain
    and split come from, and a misspelt one would silently fall back to the default domain or no split."""
    name = path.name
    if not name.startswith(("TimeVariant_", "TimeInvariant_", "Fewshot_")):
        return
    m = _FEWSHOT_FILE.match(name) or _SEED_FILE.match(name)
    domain = _known_domain(m[1]) if m else None
    split = m[2] if m and m.re is _SEED_FILE else None
    variant = name.startswith("TimeVariant_")
    if domain is None or (variant and split is None) or (name.startswith("TimeInvariant_") and split is not None):
        shape = ("TimeVariant_{domain}_{Dynamic|Static}.jsonl" if variant else "TimeInvariant_{domain}.jsonl"
                 if name.startswith("TimeInvariant_") else "Fewshot_{domain}.jsonl")
        raise InputError(path, None, f"file name is not the seed's {shape} with a domain of "
                                     f"{', '.join(SEED_DOMAIN_NAMES)}")


def _known_domain(name: str) -> str | None:
    return next((d for d in SEED_DOMAIN_NAMES if d.lower() == name.lower()), None)


DEFAULT_SEED_DOMAIN = {Domain.GENERAL: "General", Domain.BIOMEDICAL: "Biomedical", Domain.LEGAL: "Legal"}


@dataclass(frozen=True)
class Obj:
    """One object of a snapshot: its id, caption and aliases (a Legal answer is a literal)."""

    key: str
    caption: str
    aliases: tuple[str, ...]


def entity_id(text: str) -> str:
    """`ck:` + slug of the text; a hash where the slug is empty (non-Latin script) or unwieldy."""
    s = slug(text)
    if s and len(s) <= 80:
        return f"ck:{s}"
    return f"ck:h-{stable_id(' '.join(text.lower().split()))}"


def question_id(question: str) -> str:
    return f"ck:q-{stable_id(' '.join(question.split()))}"


def intervals(years: Sequence[int], held: set[int]) -> list[tuple[int, int | None, list[int]]]:
    """Runs of consecutive snapshots holding an object: (first year, first year without it or None, years)."""
    out: list[tuple[int, int | None, list[int]]] = []
    run: list[int] = []
    for year in sorted(years):
        if year in held:
            run.append(year)
        elif run:
            out.append((run[0], year, run))
            run = []
    if run:
        out.append((run[0], None, run))
    return out


def detect_domain(obj: dict[str, Any]) -> Domain | None:
    """The domain a row's fields imply; None for a time-variant row whose snapshots are all empty."""
    if "question" in obj or any(k.startswith("answers_") for k in obj):
        return Domain.LEGAL
    snapshots = [v for k, v in obj.items() if (m := _YEAR_KEY.match(k)) and m[1] == "objects"]
    if snapshots:
        for value in snapshots:
            if isinstance(value, list) and value:
                return Domain.GENERAL if isinstance(value[0], list) else Domain.BIOMEDICAL
        return None
    if "objects" in obj:
        return Domain.INVARIANT
    raise ValueError("not a ChroKnowBench row: expected subject/relation/objects_YYYY, "
                     "question/answers_YYYY, or subject/relation/objects")


def _release(path: Path, record: str, key: str, value: Any) -> dt.date:
    """A snapshot's release date: YYYY-MM-DD (or a datetime), YYYYMMDD, YYYY-MM or YYYY."""
    day: dt.date | None = None
    try:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str):
            text = value.strip()
            if m := _COMPACT_DATE.match(text):
                day = dt.date(int(m[1]), int(m[2]), int(m[3]))
            else:
                if m := _ISO_PREFIX.match(text):
                    text = m[1]
                day = parse_date(text)[0]
    except ValueError as exc:
        raise InputError(path, record, f"field {key!r}: {exc}") from exc
    if day is None:
        raise InputError(path, record, f"field {key!r} must be a date, got {value!r}")
    check_release(day, path, record, f"field {key!r}")
    return day


def _strings(path: Path, record: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(path, record, f"field {key!r} must be a list of non-empty strings, got {value!r}")
    return [v.strip() for v in value]


def _objects(path: Path, record: str, key: str, value: Any, domain: Domain, flat_general: bool = False) -> list[Obj]:
    """A snapshot's objects: alias lists (General; also accepted for time-invariant rows) or strings.

    General objects are alias lists unless `flat_general` (a General file whose rows give plain strings: the
    seed's MCQA code concatenates `'(a) ' + objects_YYYY[0]`, which only works on strings)."""
    if not isinstance(value, list):
        raise InputError(path, record, f"field {key!r} must be a list, got {type(value).__name__}")
    out: list[Obj] = []
    if domain is Domain.LEGAL:
        return [Obj(key=a, caption=a, aliases=(a,)) for a in _strings(path, record, key, value)]
    nested = bool(value) and isinstance(value[0], list)
    if domain is Domain.GENERAL and value and not nested and not flat_general:
        raise InputError(path, record, f"field {key!r}: General objects are lists of aliases, got {value[0]!r}")
    if domain is Domain.GENERAL and nested and flat_general:
        raise InputError(path, record, f"field {key!r}: an alias list in a General file of plain-string objects")
    if domain is Domain.BIOMEDICAL and nested:
        raise InputError(path, record, f"field {key!r}: Biomedical objects are strings, got {value[0]!r}")
    for k, item in enumerate(value):
        if nested:
            aliases = _strings(path, record, f"{key}[{k}]", item)
            if not aliases:
                raise InputError(path, record, f"field {key}[{k}] is an empty alias list")
        else:
            aliases = _strings(path, record, f"{key}[{k}]", [item])
        out.append(Obj(key=entity_id(aliases[0]), caption=aliases[0], aliases=tuple(dict.fromkeys(aliases))))
    return out


class ChroKnowBuilder:
    """Stages ChroKnowBench files into one batch."""

    def __init__(self, release_date: dt.date) -> None:
        self.batch = GraphBatch(POLICY)
        self.release_date = release_date
        self.records = 0
        self._aliases: dict[str, list[str]] = {}
        self.keys = RecordKeys("row")
        self.fewshot_keys = RecordKeys("few-shot row")
        self._captions: dict[str, str] = {}
        self.flat_general = False  # the file being read is a General file whose objects are plain strings

    def file_source(self, path: Path, domain: Domain) -> Source:
        src = file_source(path, KIND, self.release_date, domain.value, prefix="ChroKnowBench")
        self.batch.source(src)
        return src

    def _entity(self, obj: Obj, domain: Domain) -> None:
        self._captions.setdefault(obj.key, obj.caption)
        known = self._aliases.setdefault(obj.key, [])
        known.extend(a for a in obj.aliases if a not in known)
        self.batch.entity(obj.key, kind=f"{KIND}:{domain.value}")

    def finish(self) -> GraphBatch:
        for key, aliases in self._aliases.items():
            self.batch.node(schema.ENTITY, key, caption=self._captions[key], aliases=aliases)
        return self.batch

    def _row_question(self, qid: str, text: str, domain: Domain, record: int, state: str | None,
                      obj: dict[str, Any], src: Source, path: Path, role: FileRole, years: list[int] | None,
                      **extra: Any) -> None:
        """The row as a SourceQuestion, kept exactly as read (see the module docstring for why)."""
        distractor = obj.get("distractor")
        self.batch.node(
            schema.SOURCE_QUESTION, qid, benchmark=f"{KIND}:{domain.value}", record=record, question=text,
            temporal_state=state, distractor=None if distractor is None else json.dumps(distractor, ensure_ascii=False),
            row_json=json.dumps(obj, ensure_ascii=False), file_name=path.name, fewshot=role.fewshot,
            seed_domain=role.seed_domain or DEFAULT_SEED_DOMAIN.get(domain), split=role.split, years=years,
            **extra)
        self.batch.edge(schema.LOADED_FROM, schema.SOURCE_QUESTION, qid, schema.SOURCE, src.id)

    def row(self, path: Path, n: int, line: int, obj: dict[str, Any], domain: Domain, src: Source,
            role: FileRole) -> None:
        record = f"{n} (line {line})"
        self.batch.at(path, record)
        about = obj.get("question") if domain is Domain.LEGAL else (obj.get("subject"), obj.get("relation"))
        check_year_keys(path, record, obj, domain)
        keys = self.fewshot_keys if role.fewshot else self.keys
        if not keys.check((domain.value, about), obj, path, record):
            return  # the same row again
        if domain is Domain.LEGAL:
            legal: LegalRow = validated(LegalRow, obj, path, record)
            subject, predicate = question_id(legal.question), ANSWER
            text = legal.question
            extra: dict[str, Any] = {"question_type": legal.question_type}
            if not role.fewshot:
                caption = " ".join(legal.question.split())
                self.batch.entity(subject, kind=f"{KIND}:legal_question", caption=caption[:160])
                self.batch.node(schema.ENTITY, subject, question=legal.question, question_type=legal.question_type)
        else:
            triple: TripleRow = validated(TripleRow, obj, path, record)
            subject, predicate = entity_id(triple.subject), triple.relation
            text = f"{triple.subject} | {triple.relation}"
            extra = {"subject_text": triple.subject, "relation": triple.relation}
            if not role.fewshot:
                self._entity(Obj(key=subject, caption=triple.subject, aliases=(triple.subject,)), domain)
        years: list[int] | None = None
        if domain is Domain.INVARIANT:
            state = "invariant"
            objs = _objects(path, record, "objects", obj.get("objects"), domain)
            for o in objs if not role.fewshot else ():
                self._entity(o, domain)
                self.batch.fact(Fact(
                    subject=subject, predicate=predicate, object=o.key, precision=Precision.YEAR,
                    known_from=src.release_date, source_id=src.id, source_kind=KIND,
                    attrs={"chroknow_domain": domain.value, "temporal_state": state},
                ))
        else:
            snaps = _snapshots(path, record, obj, domain, self.flat_general)
            years = snaps.years
            state = snaps.state
            if not role.fewshot:
                self._facts(snaps, domain, subject, predicate, src)
        if role.fewshot:
            qid = f"ckf:{stable_id(domain.value, role.seed_domain or '', text)}"
        else:
            qid = f"ckq:{stable_id(domain.value, text)}"
            self.batch.edge(schema.ABOUT, schema.SOURCE_QUESTION, qid, schema.ENTITY, subject)
        self._row_question(qid, text, domain, n, state, obj, src, path, role, years, **extra)
        self.records += 1

    def _facts(self, snaps: Snapshots, domain: Domain, subject: str, predicate: str, src: Source) -> None:
        """One fact per run of consecutive snapshots holding an object."""
        for key, ys in snaps.held.items():
            o = snaps.objs[key]
            if domain is not Domain.LEGAL:
                self._entity(o, domain)
            for start, end, run in intervals(snaps.years, ys):
                self.batch.fact(Fact(
                    subject=subject, predicate=predicate,
                    object=None if domain is Domain.LEGAL else o.key,
                    value=o.caption if domain is Domain.LEGAL else None,
                    valid_from=year_start(start), valid_to=None if end is None else year_start(end),
                    precision=Precision.YEAR, known_from=min(snaps.releases[y] for y in run),
                    source_id=src.id, source_kind=KIND,
                    attrs={"chroknow_domain": domain.value, "temporal_state": snaps.state},
                ))

    def file(self, path: Path, domain: Domain | None) -> None:
        rows = list(read_json_blocks(path, MAX_TEXT))
        chosen = domain
        for n, line, obj in rows:
            try:
                seen = detect_domain(obj)
            except ValueError as exc:
                raise InputError(path, f"{n} (line {line})", str(exc)) from None
            if seen is None:
                continue
            if chosen is None:
                chosen = seen
            elif seen is not chosen:
                how = "--domain" if domain is not None else "its first rows"
                raise InputError(path, f"{n} (line {line})", f"a {seen} row in a file read as {chosen} ({how})")
        if not rows:
            raise InputError(path, None, "no records")
        chosen = chosen or Domain.GENERAL  # every snapshot empty: any time-variant reading gives no facts
        check_file_name(path)
        role = file_role(path)
        self.flat_general = domain is None and role.seed_domain == "General" and chosen is Domain.BIOMEDICAL
        if self.flat_general:
            chosen = Domain.GENERAL  # its name says General, its objects are strings
        src = self.file_source(path, chosen)
        for n, line, obj in rows:
            self.row(path, n, line, obj, chosen, src, role)


@dataclass(frozen=True)
class Snapshots:
    """The yearly snapshots of one time-variant row, validated."""

    years: list[int]
    held: dict[str, set[int]]
    objs: dict[str, Obj]
    releases: dict[int, dt.date]
    state: str


def check_year_keys(path: Path, record: str, obj: dict[str, Any], domain: Domain) -> None:
    """Refuse a snapshot key the reader would pass over: `objects_0`, `objects_99999`, a Legal row's
    `objects_YYYY`, a `release_date_YYYY` without its snapshot."""
    prefix = "answers" if domain is Domain.LEGAL else "objects"
    for key in obj:
        m = _YEARISH_KEY.match(key)
        if m is None:
            continue
        shown = caption(key, 60)
        if not _YEAR_KEY.match(key):
            raise InputError(path, record, f"field {shown!r}: expected {m[1]}_YYYY (a four-digit year)")
        if domain is Domain.INVARIANT or m[1] not in (prefix, "release_date"):
            kinds = "objects (no years)" if domain is Domain.INVARIANT else f"{prefix}_YYYY"
            raise InputError(path, record, f"field {shown!r} in a {domain} row, whose snapshots are {kinds}")
        if m[1] == "release_date" and f"{prefix}_{m[2]}" not in obj:
            raise InputError(path, record, f"field {shown!r} has no {prefix}_{m[2]!s}")


def _snapshots(path: Path, record: str, obj: dict[str, Any], domain: Domain, flat_general: bool = False) -> Snapshots:
    """Read and check the yearly snapshots of one row; its state is static when every year has the same objects."""
    prefix = "answers" if domain is Domain.LEGAL else "objects"
    years = sorted(int(m[2]) for k in obj if (m := _YEAR_KEY.match(k)) and m[1] == prefix)
    if not years:
        raise InputError(path, record, f"no {prefix}_YYYY fields")
    held: dict[str, set[int]] = {}
    objs: dict[str, Obj] = {}
    releases: dict[int, dt.date] = {}
    per_year: list[frozenset[str]] = []
    for year in years:
        key = f"{prefix}_{year}"
        date_key = f"release_date_{year}"
        if date_key not in obj:
            raise InputError(path, record, f"field {key!r} has no {date_key!r}")
        releases[year] = _release(path, record, date_key, obj[date_key])
        found = _objects(path, record, key, obj[key], domain, flat_general)
        per_year.append(frozenset(o.key for o in found))
        for o in found:
            objs.setdefault(o.key, o)
            held.setdefault(o.key, set()).add(year)
    state = "static" if len(set(per_year)) == 1 else "dynamic"
    return Snapshots(years, held, objs, releases, state)


def expand(paths: Iterable[Path]) -> list[Path]:
    """Files as given; a folder contributes its own `*.jsonl` and those of its `Fewshots/` sub-folder."""
    listed: list[Path] = []
    for p in paths:
        if not p.is_dir():
            listed.append(p)
            continue
        for folder in (p, p / FEWSHOTS):
            if folder.is_dir():
                listed.extend(sorted(f for f in folder.iterdir() if f.is_file() and f.suffix == ".jsonl"))
    return expand_paths(listed, lambda f: f.suffix == ".jsonl", "ChroKnowBench files (.jsonl)")


def stage(paths: Iterable[Path], domain: Domain | None = None,
          release_date: dt.date = DEFAULT_RELEASE) -> tuple[GraphBatch, int, list[Path]]:
    """Parse and validate every file into one batch (nothing is written)."""
    files = expand(paths)
    builder = ChroKnowBuilder(release_date)
    for f in files:
        builder.file(f, domain)
    return builder.finish(), builder.records, files


def load(store: GraphStore, paths: Iterable[Path], domain: Domain | None = None,
         release_date: dt.date = DEFAULT_RELEASE, progress: Progress | None = None) -> LoadSummary:
    """Load ChroKnowBench JSONL files in one transaction; bad input raises `InputError` and writes nothing."""
    batch, records, files = stage(paths, domain, release_date)
    return apply(store, batch, KIND, files, records, progress)

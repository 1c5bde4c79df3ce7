"""The demo corpus that ships with chronokg, and its loader.

The corpus is small and self-authored (see corpus.json, "about"): a few real
guideline evolutions (CPR, hypertension, aspirin for primary prevention) and
office-holder facts, including one bitemporal correction, so every catalog
query has something to show. A later release of it (corpus-release-2.json) adds
a newer guideline that supersedes a recommendation the first release holds as
still in force: that fact is retracted as of the later release and restated as
ended, so a run scored on the first release can be re-scored against the later one.
"""

from __future__ import annotations

import datetime as dt
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.dates import Precision, parse_date, year_start
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import LoadSummary, apply
from chronokg.ingest.tempomed import RECOMMENDATION, GuidelineBuilder
from chronokg.progress import Progress

KIND = "chronokg-demo"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GuidelineIn(_Strict):
    id: str
    year: int
    caption: str
    organization: str
    topic: str


class SupersessionIn(_Strict):
    current: str
    prior: str


class VersionIn(_Strict):
    guideline: str
    recommendation: str
    change: str | None = None


class DecisionIn(_Strict):
    id: str
    caption: str
    category: str
    versions: list[VersionIn] = Field(min_length=2)


class FactIn(_Strict):
    subject: str
    subject_caption: str | None = None
    predicate: str
    object: str
    object_caption: str | None = None
    valid_from: str
    valid_to: str | None = None
    known_from: str | None = None
    known_to: str | None = None
    note: str | None = None


class SourceIn(_Strict):
    id: str
    caption: str
    version: str
    release_date: dt.date


class Corpus(_Strict):
    about: str
    source: SourceIn
    guidelines: list[GuidelineIn]
    supersessions: list[SupersessionIn]
    decisions: list[DecisionIn]
    facts: list[FactIn]


def corpus_file() -> Path:
    """The corpus shipped in the package (its summary names it as the one file read)."""
    return Path(str(resources.files("chronokg.demo").joinpath("corpus.json")))


def read_corpus() -> Corpus:
    return Corpus.model_validate_json(corpus_file().read_text(encoding="utf-8"))


def load_demo(store: GraphStore, progress: Progress | None = None) -> LoadSummary:
    corpus = read_corpus()
    src = Source(kind=KIND, **corpus.source.model_dump())
    builder = GuidelineBuilder(src.release_date or dt.date.today())
    builder.batch.source(src)
    years = {g.id: g.year for g in corpus.guidelines}
    for g in corpus.guidelines:
        builder.guideline(g.id, g.year, src, caption=g.caption, topic=g.topic, organizations=[g.organization])
    for s in corpus.supersessions:
        builder.supersession(s.current, years[s.current], s.prior, src)
    for d in corpus.decisions:
        builder.batch.entity(d.id, kind="clinical_decision", caption=d.caption)
        versions = sorted(d.versions, key=lambda v: years[v.guideline])
        fact_ids = []
        for i, v in enumerate(versions):
            end = years[versions[i + 1].guideline] if i + 1 < len(versions) else None
            fact_ids.append(builder.recommendation(
                decision=d.id, guideline=v.guideline, text=v.recommendation, start=years[v.guideline], end=end,
                src=src, clinical_focus=d.caption,
            ))
        for i in range(1, len(versions)):
            builder.change_pair(
                decision=d.id, current=versions[i].guideline, prior=versions[i - 1].guideline,
                current_fact=fact_ids[i], prior_fact=fact_ids[i - 1], summary=versions[i].change, src=src,
                clinical_focus=d.caption, category=d.category,
            )
    for f in corpus.facts:
        builder.batch.entity(f.subject, kind="demo", caption=f.subject_caption)
        builder.batch.entity(f.object, kind="demo", caption=f.object_caption)
        start, precision = parse_date(f.valid_from)
        builder.batch.fact(Fact(
            subject=f.subject, predicate=f.predicate, object=f.object, valid_from=start,
            valid_to=parse_date(f.valid_to)[0] if f.valid_to else None, precision=precision,
            known_from=parse_date(f.known_from)[0] if f.known_from else src.release_date,
            known_to=parse_date(f.known_to)[0] if f.known_to else None, source_id=src.id, source_kind=KIND,
        ))
    records = len(corpus.decisions) + len(corpus.facts)
    return apply(store, builder.batch, KIND, [corpus_file()], records, progress)


class LaterVersionIn(_Strict):
    decision: str
    guideline: str
    recommendation: str
    change: str


class LaterRelease(_Strict):
    about: str
    source: SourceIn
    guidelines: list[GuidelineIn]
    supersessions: list[SupersessionIn]
    versions: list[LaterVersionIn]


def later_file() -> Path:
    return Path(str(resources.files("chronokg.demo").joinpath("corpus-release-2.json")))


def read_later() -> LaterRelease:
    return LaterRelease.model_validate_json(later_file().read_text(encoding="utf-8"))


def load_later_release(store: GraphStore, progress: Progress | None = None) -> LoadSummary:
    """The corpus's later release, over a store holding the first (`load_demo`): its guidelines, supersessions
    and, per newer version of a decision, the decision's last version retracted as still in force and restated as
    ended by the newer one, the newer version in force from its year, and the change pair between them."""
    corpus, path, later = read_corpus(), later_file(), read_later()
    first = Source(kind=KIND, **corpus.source.model_dump())
    src = Source(kind=KIND, **later.source.model_dump())
    builder = GuidelineBuilder(src.release_date or dt.date.today())
    builder.batch.source(src)
    years = {g.id: g.year for g in [*corpus.guidelines, *later.guidelines]}
    for g in later.guidelines:
        builder.guideline(g.id, g.year, src, caption=g.caption, topic=g.topic, organizations=[g.organization])
    for s in later.supersessions:
        builder.supersession(s.current, years[s.current], s.prior, src)
    decisions = {d.id: d for d in corpus.decisions}
    for n, v in enumerate(later.versions, start=1):
        builder.batch.at(path, f"versions[{n}]")
        d = decisions.get(v.decision)
        if d is None or v.guideline not in years:
            raise InputError(path, f"versions[{n}]", f"no decision {v.decision!r} or guideline {v.guideline!r} "
                                                     "in the corpus")
        last = max(d.versions, key=lambda x: years[x.guideline])
        start = years[last.guideline]
        held = Fact(subject=d.id, predicate=RECOMMENDATION, value=last.recommendation, valid_from=year_start(start),
                    precision=Precision.YEAR, known_from=first.release_date, source_id=first.id, source_kind=KIND,
                    attrs={"guideline_id": last.guideline, "clinical_focus": d.caption})
        props = held.node_properties()
        fid = str(props.pop("id"))
        props.update(known_to=src.release_date, retracted_by=src.id)  # no longer believed still in force
        builder.batch.node(schema.FACT, fid, **props)
        ended = builder.recommendation(decision=d.id, guideline=last.guideline, text=last.recommendation,
                                       start=start, end=years[v.guideline], src=src, clinical_focus=d.caption)
        newer = builder.recommendation(decision=d.id, guideline=v.guideline, text=v.recommendation,
                                       start=years[v.guideline], end=None, src=src, clinical_focus=d.caption)
        builder.change_pair(decision=d.id, current=v.guideline, prior=last.guideline, current_fact=newer,
                            prior_fact=ended, summary=v.change, src=src, clinical_focus=d.caption,
                            category=d.category)
    records = len(later.guidelines) + len(later.versions)
    return apply(store, builder.batch, KIND, [path], records, progress)


__all__ = ["Corpus", "later_file", "load_demo", "load_later_release", "read_corpus", "read_later"]

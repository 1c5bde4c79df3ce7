"""DriftMed / ConflictMedQA (Hugging Face `RDBH/DriftMed`): current vs pseudo-outdated recommendations.

Rows are `{id, text, label, bias_type, change_category, disease}` with label
`correct` (the current recommendation) or `wrong` (its outdated version). The
wrong scenario of a pair has id = correct id + 2145 (195 recommendation pairs x
11 factors). JSONL, a JSON list, CSV and (with duckdb installed) parquet are read.

Rows without a `bias_type` (and `factor`) are recommendation pairs rather than
scenarios: the advice itself, current and pseudo-outdated, from which the
ConflictMedQA family writes its 22 scenarios (the authors' `<Disease>_correct_advice.csv`
inputs, in DriftMed's columns). An optional `disease_group` column (the paper's
"infectious" / "chronic") is kept on the change pair.

Each pair becomes a clinical-decision entity `driftmed:<correct id>` (its
caption names disease, change category and factor; the factor is the row's
`factor` field when present, else its `bias_type`), a change pair, the two row
texts as SourceQuestions (scenario rows only), and two `recommendation` facts:

* current: valid from an unknown start (`valid_from` None, year precision), open-ended;
* outdated: DriftMed gives no dates, so it is modelled as superseded no later
  than the benchmark's release: unknown start, `valid_to` = release date (day
  precision). As of the release or later only the current one holds; before
  it, both are returned, since nothing says when the change happened.

Both are known from the release date and carry `driftmed_label`, `bias_type`,
`change_category`, `disease`, `factor` and `driftmed_id`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import (
    LoadSummary,
    Text,
    apply,
    expand_paths,
    file_source,
    read_csv_records,
    read_json,
    read_json_blocks,
    validated,
)
from chronokg.ingest.limits import check_texts
from chronokg.progress import Progress

KIND = "driftmed"
RECOMMENDATION = "recommendation"
PAIR_OFFSET = 2145  # 195 recommendation pairs x 11 factors: wrong id = correct id + 2145
# "Assessing and Mitigating Medical Knowledge Drift and Conflicts in LLMs" (arXiv 2505.07968),
# published 2025-05-12: the known time of every fact and the latest end of the outdated ones.
DEFAULT_RELEASE = dt.date(2025, 5, 12)
HF_REPO = "RDBH/DriftMed"
DEFAULT_BASE_URL = f"https://huggingface.co/datasets/{HF_REPO}/resolve"
# Hugging Face's automatic parquet conversion of the default config (revision/path under the base URL).
DEFAULT_FILE = "refs%2Fconvert%2Fparquet/default/train/0000.parquet"
# Characters in one field of a record (README, "Input limits"): a recommendation is a paragraph at most.
MAX_TEXT = 20_000
SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
# The paper's five change categories (§3.1, Appendix C) and two disease groups (§3.1: infectious n = 66, chronic
# n = 129), and the 11 factors below: every row's `change_category`, `disease_group`, `bias_type` and `factor` is
# checked against them at load.
CATEGORIES: tuple[str, ...] = ("Clinical Context", "Diagnostic & Threshold", "Implementation Approach",
                               "Recommendation Intensity", "Treatment Modality")
CATEGORY_ALIASES = {"diagnostic and threshold": "Diagnostic & Threshold"}
DISEASE_GROUPS: tuple[str, ...] = ("infectious", "chronic")
DISEASE_GROUP_ALIASES = {f"{g} {w}": g for g in DISEASE_GROUPS for w in ("disease", "diseases")}


@dataclasses.dataclass(frozen=True)
class Factor:
    """One of the paper's 11 factors: its key, the seed code's string (the `{bias_type}` of the prompt and the
    DriftMed `bias_type`), and the paper's Table 4 row name."""

    key: str
    seed: str
    paper: str
    aliases: tuple[str, ...] = ()


# In the seed's order (`generate_scenarios.py` bias_types; paper Tables 8-10), aliases from paper §3.1.
FACTORS: tuple[Factor, ...] = (
    Factor("self_diagnosis", "Self-Diagnosis Bias", "Self-Diagnosis", ("self-diagnosis",)),
    Factor("recency", "Recency Bias", "Recency Factor", ("recency",)),
    Factor("confirmation", "Confirmation Bias", "Confirmation"),
    Factor("frequency", "Frequency Bias", "Frequency"),
    Factor("cultural", "Cultural Bias", "Cultural Factor", ("cultural",)),
    Factor("status_quo", "Status Quo Bias", "Status Quo"),
    Factor("false_consensus", "False Consensus Bias", "False Consensus"),
    Factor("racial_ethnic", "Racial/Ethnic Bias", "Racial/Ethnic", ("racial or ethnic",)),
    Factor("socioeconomic", "Socioeconomic Bias", "Socioeconomic"),
    Factor("geographic", "Geographic Bias", "Geographic", ("geographical",)),
    Factor("no_factor", "No Bias", "No Factor"),
)


def find_factor(name: str) -> Factor | None:
    """The factor `name` names (its key, the seed code's or the paper's name, an alias; any case), or None."""
    wanted = " ".join(name.split()).lower()
    return next((f for f in FACTORS if wanted in {f.key, f.seed.lower(), f.paper.lower(), *f.aliases}), None)


def _in_vocabulary(value: str, names: tuple[str, ...], aliases: dict[str, str]) -> str | None:
    """The vocabulary's own spelling of `value` (case, spacing, snake-case or a known alias), or None."""
    wanted = " ".join(value.split()).lower()
    for name in names:
        if wanted in {name.lower(), name.lower().replace(" & ", "_").replace(" ", "_")}:
            return name
    return aliases.get(wanted)

class DriftRow(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int
    text: Text
    label: Text
    bias_type: Text | None = None  # absent: the row is a recommendation, not a scenario
    change_category: Text
    disease: Text
    factor: str | None = None
    disease_group: str | None = None

    @field_validator("bias_type", "factor", "disease_group", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        """An empty CSV cell of an optional column means the column is absent for that row."""
        return None if isinstance(value, str) and not value.strip() else value


@dataclass(frozen=True)
class Located:
    """A validated row and where it came from (for errors and provenance)."""

    row: DriftRow
    path: Path
    record: str
    source: Source


def _parquet_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    try:
        import duckdb
    except ImportError:
        raise InputError(path, None, "reading parquet needs duckdb (pip install duckdb); "
                                     "or pass the JSONL/CSV export") from None
    try:
        with duckdb.connect() as con:
            cur = con.execute("SELECT * FROM read_parquet($1)", [str(path)])
            columns = [d[0] for d in cur.description or []]
            rows = cur.fetchall()
    except duckdb.Error as exc:
        raise InputError(path, None, f"not a readable parquet file: {exc}") from exc
    for n, values in enumerate(rows, start=1):
        yield f"row {n}", check_texts(dict(zip(columns, values, strict=True)), path, f"row {n}", MAX_TEXT)


def _json_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    data = read_json(path, MAX_TEXT)
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise InputError(path, None, "expected a JSON list of rows (or {\"data\": [...]})")
    for n, obj in enumerate(data, start=1):
        if not isinstance(obj, dict):
            raise InputError(path, f"{n}", f"expected an object, got {type(obj).__name__}")
        yield f"{n} (id {obj.get('id', '?')})", obj


def read_rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(record label, raw row) pairs of one file, by its suffix."""
    if path.suffix == ".csv":
        yield from read_csv_records(path, max_text=MAX_TEXT)
    elif path.suffix == ".parquet":
        yield from _parquet_rows(path)
    elif path.suffix == ".json":
        yield from _json_rows(path)
    else:
        for n, line, obj in read_json_blocks(path, MAX_TEXT):
            yield f"{n} (line {line})", obj


def _validate(path: Path, record: str, obj: dict[str, Any]) -> DriftRow:
    row: DriftRow = validated(DriftRow, obj, path, record)
    label = row.label.lower()
    if label not in {"correct", "wrong"}:
        raise InputError(path, record, f"unknown label {row.label!r} (expected 'correct' or 'wrong')")
    category = _in_vocabulary(row.change_category, CATEGORIES, CATEGORY_ALIASES)
    if category is None:
        raise InputError(path, record, f"unknown change_category {row.change_category!r} (expected one of the "
                                       f"paper's five: {', '.join(CATEGORIES)})")
    for column in ("bias_type", "factor"):  # the seed's 11 factors; kept as spelled (exports give them back)
        value = getattr(row, column)
        if value is not None and find_factor(value) is None:
            raise InputError(path, record, f"unknown {column} {value!r} (expected one of the paper's 11 factors: "
                                           f"{', '.join(f.seed for f in FACTORS)})")
    group = row.disease_group
    if group is not None:
        group = _in_vocabulary(group, DISEASE_GROUPS, DISEASE_GROUP_ALIASES)
        if group is None:
            raise InputError(path, record, f"unknown disease_group {row.disease_group!r} (expected "
                                           f"{' or '.join(DISEASE_GROUPS)})")
    return row.model_copy(update={"label": label, "change_category": category, "disease_group": group})


def collect(paths: Iterable[Path], release_date: dt.date) -> tuple[dict[int, Located], list[Source]]:
    """Every row of every file by id; a repeated id with different content is an error."""
    rows: dict[int, Located] = {}
    sources: list[Source] = []
    for path in paths:
        src = file_source(path, KIND, release_date, prefix="DriftMed")
        sources.append(src)
        count = 0
        for record, obj in read_rows(path):
            row = _validate(path, record, obj)
            count += 1
            seen = rows.get(row.id)
            if seen is not None and seen.row != row:
                raise InputError(path, record, f"id {row.id} also names a different row ({seen.path}, "
                                               f"record {seen.record})")
            rows.setdefault(row.id, Located(row, path, record, src))
        if count == 0:
            raise InputError(path, None, "no rows")
    return rows, sources


def pairs(rows: dict[int, Located]) -> list[tuple[Located, Located]]:
    """(correct, wrong) pairs; a row without its partner or with the wrong partner label is an error."""
    out = []
    for rid in sorted(rows):
        loc = rows[rid]
        if loc.row.label == "correct":
            partner = rows.get(rid + PAIR_OFFSET)
            if partner is None:
                raise InputError(loc.path, loc.record, f"correct scenario {rid} has no wrong partner "
                                                       f"(id {rid + PAIR_OFFSET})")
            if partner.row.label != "wrong":
                raise InputError(partner.path, partner.record, f"id {partner.row.id} pairs with correct scenario "
                                                               f"{rid} but is labelled {partner.row.label!r}")
            out.append((loc, partner))
        else:
            partner = rows.get(rid - PAIR_OFFSET)
            if partner is None or partner.row.label != "correct":
                raise InputError(loc.path, loc.record, f"wrong scenario {rid} has no correct partner "
                                                       f"(id {rid - PAIR_OFFSET})")
    return out


def _attrs(row: DriftRow, factor: str | None) -> dict[str, Any]:
    return {"driftmed_label": row.label, "driftmed_id": row.id, "bias_type": row.bias_type,
            "change_category": row.change_category, "disease": row.disease, "factor": factor}


def stage(paths: Iterable[Path], release_date: dt.date = DEFAULT_RELEASE) -> tuple[GraphBatch, int, list[Path]]:
    """Parse, validate and pair every row into one batch (nothing is written)."""
    files = expand(paths)
    rows, sources = collect(files, release_date)
    batch = GraphBatch()
    for src in sources:
        batch.source(src)
    for cur, old in pairs(rows):
        c, w = cur.row, old.row
        batch.at(cur.path, cur.record)
        factor = c.factor or c.bias_type
        decision = f"{KIND}:{c.id}"
        parts = [c.disease, c.change_category] + ([factor] if factor else [])
        batch.entity(decision, kind="clinical_decision", caption=" — ".join(parts))
        current = batch.fact(Fact(
            subject=decision, predicate=RECOMMENDATION, value=c.text, precision=Precision.YEAR,
            known_from=release_date, source_id=cur.source.id, source_kind=KIND, attrs=_attrs(c, factor),
        ))
        outdated = batch.fact(Fact(
            subject=decision, predicate=RECOMMENDATION, value=w.text, valid_to=release_date,
            precision=Precision.DAY, known_from=release_date, source_id=old.source.id, source_kind=KIND,
            attrs=_attrs(w, w.factor or w.bias_type),
        ))
        pair = f"{KIND}-cp:{c.id}"
        batch.node(schema.CHANGE_PAIR, pair, decision_id=decision, category=c.change_category,
                   clinical_focus=c.disease, factor=factor, disease_group=c.disease_group)
        batch.edge(schema.CURRENT, schema.CHANGE_PAIR, pair, schema.FACT, current)
        batch.edge(schema.PRIOR, schema.CHANGE_PAIR, pair, schema.FACT, outdated)
        batch.edge(schema.LOADED_FROM, schema.CHANGE_PAIR, pair, schema.SOURCE, cur.source.id)
        for loc in (cur, old) if factor else ():  # recommendation rows are no questions
            qid = f"{KIND}-q:{loc.row.id}"
            batch.node(schema.SOURCE_QUESTION, qid, benchmark=KIND, record=loc.row.id, question=loc.row.text,
                       driftmed_label=loc.row.label, bias_type=loc.row.bias_type)
            batch.edge(schema.ABOUT, schema.SOURCE_QUESTION, qid, schema.CHANGE_PAIR, pair)
            batch.edge(schema.LOADED_FROM, schema.SOURCE_QUESTION, qid, schema.SOURCE, loc.source.id)
    return batch, len(rows), files


def expand(paths: Iterable[Path]) -> list[Path]:
    return expand_paths(paths, lambda p: p.suffix in SUFFIXES, f"DriftMed files ({', '.join(SUFFIXES)})")


def load(store: GraphStore, paths: Iterable[Path], release_date: dt.date = DEFAULT_RELEASE,
         progress: Progress | None = None) -> LoadSummary:
    """Load DriftMed files in one transaction; bad input raises `InputError` and writes nothing."""
    batch, records, files = stage(paths, release_date)
    return apply(store, batch, KIND, files, records, progress)


def download_url(base_url: str = DEFAULT_BASE_URL, file: str = DEFAULT_FILE) -> str:
    return f"{base_url.rstrip('/')}/{file.lstrip('/')}"


def target_name(file: str) -> str:
    """A local file name for a remote path, keeping the suffix the reader needs."""
    suffix = next((s for s in SUFFIXES if file.endswith(s)), ".parquet")
    return f"driftmed{suffix}"

"""Labels, relationship types, constraints and indexes of the chronokg graph.

The DDL below is Neo4j 5 syntax and runs unchanged on the embedded engine. It
is created idempotently (`IF NOT EXISTS`) each time a store is opened.
"""

from __future__ import annotations

import re
from typing import Final

# Node labels, each keyed by a unique `id`.
SOURCE: Final = "Source"
ENTITY: Final = "Entity"
FACT: Final = "Fact"
ORGANIZATION: Final = "Organization"
GUIDELINE: Final = "Guideline"
TRAJECTORY: Final = "Trajectory"
CHANGE_PAIR: Final = "ChangePair"
SOURCE_QUESTION: Final = "SourceQuestion"
PATIENT: Final = "Patient"
STUDY: Final = "Study"
OBSERVATION: Final = "Observation"
SNAPSHOT: Final = "Snapshot"  # the source releases a benchmark was generated from
QUESTION: Final = "Question"  # a generated benchmark item (chronokg.bench)
RUN: Final = "Run"  # an evaluation run (chronokg.eval)
PREDICTION: Final = "Prediction"  # one sample of one model on one question in a run

# Relationship types.
SUBJECT: Final = "SUBJECT"  # (Fact)->(Entity)
OBJECT: Final = "OBJECT"  # (Fact)->(Entity)
ASSERTED_IN: Final = "ASSERTED_IN"  # (Fact)->(Source), one per release that asserts it
FROM_GUIDELINE: Final = "FROM_GUIDELINE"  # (Fact)->(Guideline)
ISSUED_BY: Final = "ISSUED_BY"  # (Guideline)->(Organization)
SUPERSEDES: Final = "SUPERSEDES"  # (newer Guideline)->(older Guideline)
IN_TRAJECTORY: Final = "IN_TRAJECTORY"  # (Guideline)->(Trajectory)
CURRENT: Final = "CURRENT"  # (ChangePair)->(Fact)
PRIOR: Final = "PRIOR"  # (ChangePair)->(Fact)
ABOUT: Final = "ABOUT"  # (SourceQuestion)->(ChangePair | Entity)
LOADED_FROM: Final = "LOADED_FROM"  # (Guideline|Trajectory|...)->(Source)
TESTS: Final = "TESTS"  # (Question)->(Fact) the facts its answer key reads
DERIVED_FROM: Final = "DERIVED_FROM"  # (Question)->(ChangePair|Trajectory|Study|SourceQuestion|...)
GENERATED_AT: Final = "GENERATED_AT"  # (Question)->(Snapshot)
ANSWERS: Final = "ANSWERS"  # (Prediction)->(Question)
IN_RUN: Final = "IN_RUN"  # (Prediction)->(Run)
CHOSE: Final = "CHOSE"  # (Prediction)->(Fact) the fact the option it chose states

KEYED_LABELS: Final = (
    SOURCE, ENTITY, FACT, ORGANIZATION, GUIDELINE, TRAJECTORY, CHANGE_PAIR, SOURCE_QUESTION,
    PATIENT, STUDY, OBSERVATION, SNAPSHOT, QUESTION, RUN, PREDICTION,
)

# Properties every node of a label may carry. The embedded engine rejects a
# property a label has never seen unless it is declared, so the store declares
# these on open and the writer declares any extra ones before a load.
BASE_PROPERTIES: Final[dict[str, tuple[str, ...]]] = {
    SOURCE: ("kind", "caption", "version", "release_date", "checksum", "path", "loaded_at"),
    ENTITY: ("kind", "caption"),
    FACT: (
        "subject_id", "predicate", "object_id", "value", "valid_from", "valid_to", "precision",
        "known_from", "known_to", "source_id", "source_kind",
    ),
    ORGANIZATION: ("caption",),
    GUIDELINE: ("pmid", "year", "issued", "precision", "caption", "topic"),
    TRAJECTORY: ("current_pmid", "topic", "caption", "category"),
    CHANGE_PAIR: ("decision_id", "current_pmid", "prior_pmid", "summary", "category", "clinical_focus"),
    SOURCE_QUESTION: (
        "benchmark", "record", "question", "choices", "correct", "explanation", "answers", "answerable",
        "time_sensitive",
    ),
}


# What the embedded engine (kglite) leaves out of the schema above, by DDL name, and why (docs/model.md,
# "Engines"): a fact's id is a hash of its content (`Fact.id`) and every kglite label keeps its own id map, so
# the uniqueness constraint guards nothing a load could break and cost ~1 µs a fact to build; `valid_from` range
# reads go to the interval sidecar; nothing on a hot path looks facts up by `source_id` alone. Each was built on
# every load and rebuilt on every read-only open. Neo4j keeps all of them.
EMBEDDED_OMITS: Final = frozenset({"fact_id", "fact_valid_from", "fact_source"})


def constraint_ddl() -> list[str]:
    return [
        f"CREATE CONSTRAINT {label.lower()}_id IF NOT EXISTS FOR (n:{label}) REQUIRE n.id IS UNIQUE"
        for label in KEYED_LABELS
    ]


def index_ddl() -> list[str]:
    return [
        "CREATE INDEX fact_subject IF NOT EXISTS FOR (f:Fact) ON (f.subject_id)",
        "CREATE INDEX fact_predicate IF NOT EXISTS FOR (f:Fact) ON (f.predicate)",
        "CREATE INDEX fact_source IF NOT EXISTS FOR (f:Fact) ON (f.source_id)",
        "CREATE INDEX fact_source_kind IF NOT EXISTS FOR (f:Fact) ON (f.source_kind)",
        "CREATE INDEX prediction_run IF NOT EXISTS FOR (p:Prediction) ON (p.run_id)",
        "CREATE RANGE INDEX fact_valid_from IF NOT EXISTS FOR (f:Fact) ON (f.valid_from)",
    ]


_DDL_NAME = re.compile(r"(?:CONSTRAINT|INDEX) (\w+) IF NOT EXISTS")


def ddl_name(ddl: str) -> str:
    """The name a schema DDL statement creates (`CREATE INDEX fact_subject IF NOT EXISTS ...`)."""
    found = _DDL_NAME.search(ddl)
    return found.group(1) if found else ddl


def embedded_ddl() -> list[str]:
    """The constraints and indexes the embedded engine keeps: all but `EMBEDDED_OMITS`."""
    return [ddl for ddl in [*constraint_ddl(), *index_ddl()] if ddl_name(ddl) not in EMBEDDED_OMITS]

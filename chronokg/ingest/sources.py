"""SOURCES: every source chronokg loads, declared once, with the commands its CLI module adds.

A spec is light (names and module paths, nothing imported), so the CLI lists
`chronokg ingest` / `download` / `export` commands from here and imports a
source's module only when one of its commands is shown in full or run. Adding a
source is one folder (`ingest/<name>/`: the loader), its commands in
`cli/loaders/<name>.py` (the CLI layer; `ingest` never imports `cli`) and one
line below (README, "Adding a source").
"""

from __future__ import annotations

from dataclasses import dataclass

from chronokg.registry import Registry


@dataclass(frozen=True)
class SourceSpec:
    """A source: its `Source.kind`, its loader (`module:function`), its CLI module and the commands it adds.

    `commands` are `group/name` pairs (`ingest/cfr`, `download/cfr`, `export/rdf`); the CLI module's
    `register(groups)` must add exactly these (tests check it). `loader` is `load(store, paths, ...,
    progress=None) -> LoadSummary` (docs: DEVELOPERS.md, "The loader contract").
    """

    name: str
    kind: str
    loader: str
    cli: str
    commands: tuple[str, ...]
    help: str = ""

    def in_group(self, group: str) -> list[str]:
        return [c.partition("/")[2] for c in self.commands if c.partition("/")[0] == group]


SOURCES: Registry[SourceSpec] = Registry("source")


def source(spec: SourceSpec) -> None:
    SOURCES.register(spec.name, spec)


_I = "chronokg.ingest"
_C = "chronokg.cli.loaders"  # the CLI layer builds these commands; ingest never imports it
source(SourceSpec("tempomed", "tempomed", f"{_I}.tempomed:load", f"{_C}.tempomed", ("ingest/tempomed",),
                  "TempoMed-Bench MCQs, trajectories and difference files"))
source(SourceSpec("wikidata", "wikidata", f"{_I}.wikidata:load", f"{_C}.wikidata",
                  ("ingest/wikidata", "ingest/wikidata-sparql", "download/wikidata", "export/rdf"),
                  "Wikidata entities, dumps and SPARQL results"))
source(SourceSpec("umls", "umls", f"{_I}.umls:load", f"{_C}.umls", ("ingest/umls",),
                  "UMLS Metathesaurus relations across releases"))
source(SourceSpec("cfr", "cfr", f"{_I}.cfr:load", f"{_C}.cfr", ("ingest/cfr", "download/cfr"),
                  "Code of Federal Regulations editions"))
source(SourceSpec("chroknow", "chroknow", f"{_I}.chroknow:load", f"{_C}.chroknow", ("ingest/chroknow",),
                  "ChroKnowBench rows"))
source(SourceSpec("driftmed", "driftmed", f"{_I}.driftmed:load", f"{_C}.driftmed",
                  ("ingest/driftmed", "download/driftmed"), "DriftMed recommendation pairs"))
source(SourceSpec("qa", "qa", f"{_I}.qasets:load", f"{_C}.qasets", ("ingest/qa", "ingest/qa-update"),
                  "QA benchmarks (SelfAware, TruthfulQA, TriviaQA, NQ, BoolQ)"))
source(SourceSpec("cxr", "cxr", f"{_I}.cxr:load", f"{_C}.cxr", ("ingest/cxr", "generate/cxr"),
                  "Chest X-ray scene-graph timelines"))
source(SourceSpec("public", "public", f"{_I}.public:PUBLIC_FILES", f"{_C}.public",
                  ("download/tempomed", "download/selfaware", "download/truthfulqa"),
                  "Pinned public files"))


__all__ = ["SOURCES", "SourceSpec", "source"]

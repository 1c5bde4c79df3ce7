"""SOURCES: every source chronokg loads, declared once, with its commands and its `ingest` parameters as data.

A spec is light (names, module paths and parameter specs, no source module imported), so the CLI lists
`chronokg ingest` / `download` / `export` commands from here and imports a source's module only when one of
its commands is shown in full or run. The CLI builds `ingest <name>` from `SourceSpec.ingest`
(`cli/ingest_command.py`); other commands (downloads, exports, generators) live in `cli/loaders/<name>.py`,
named by `SourceSpec.cli` (`ingest` never imports `cli`). Adding a source is one folder (`ingest/<name>/`: the
loader) and one entry below (README, "Adding a source").
"""

from __future__ import annotations

from dataclasses import dataclass

from chronokg.ingest.options import DATE_HELP, RELEASE_DATE, IngestOptions, Param
from chronokg.registry import Registry


@dataclass(frozen=True)
class SourceSpec:
    """A source: its `Source.kind`, its loader (`module:function`), its commands and its `ingest` parameters.

    `commands` are `group/name` pairs (`ingest/cfr`, `download/cfr`, `export/rdf`): `ingest/<name>` is built
    from `ingest`, the rest by the `register(groups)` of the CLI module `cli` (None: no other commands);
    together they must add exactly these (tests check it). `loader` is `load(store, paths, ...,
    progress=None) -> LoadSummary` (docs: DEVELOPERS.md, "The loader contract").
    """

    name: str
    kind: str
    loader: str
    cli: str | None
    commands: tuple[str, ...]
    help: str = ""
    ingest: IngestOptions | None = None

    def in_group(self, group: str) -> list[str]:
        return [c.partition("/")[2] for c in self.commands if c.partition("/")[0] == group]


SOURCES: Registry[SourceSpec] = Registry("source", group="sources")


def source(spec: SourceSpec) -> None:
    SOURCES.register(spec.name, spec)


_I = "chronokg.ingest"
_C = "chronokg.cli.loaders"  # the CLI layer builds these commands; ingest never imports it
_R = "chronokg.cli.ingest_reports"  # what a source prints after the load summary (CLI layer)


def paths(help: str, metavar: str | None = None, to: str | None = None) -> Param:
    """The files or folders to load: the command's one argument."""
    return Param(name="paths", kind="path", help=help, multiple=True, argument=True, required=True,
                 metavar=metavar, to=to)


source(SourceSpec("tempomed", "tempomed", f"{_I}.tempomed:load", None, ("ingest/tempomed",),
                  "TempoMed-Bench MCQs, trajectories and difference files", IngestOptions(
    help="TempoMed-Bench MCQs, trajectories and difference files (one transaction; bad input writes nothing).",
    params=(paths("MCQ .jsonl, trajectory .json, *_extracted_diffs.json, or folders"), RELEASE_DATE))))
source(SourceSpec("wikidata", "wikidata", f"{_I}.wikidata:load", f"{_C}.wikidata",
                  ("ingest/wikidata", "ingest/wikidata-sparql", "download/wikidata", "export/rdf"),
                  "Wikidata entities, dumps and SPARQL results", IngestOptions(
    help="Wikidata entities as facts valid between their qualifiers (one transaction; bad input writes nothing).",
    params=(paths("Entity JSON (Special:EntityData), dumps (latest-all.json.gz), or folders"),
            Param(name="properties", kind="str", default="timed",
                  help="timed (every property with time qualifiers), temporal (ChroKnowBench's P39 P54 P108 P463 "
                       "P69 P169 P1037 P1308), all, or a list such as P39,P108")),
    prepare=f"{_I}.wikidata.cli_values:prepare", report=f"{_R}:wikidata")))
source(SourceSpec("umls", "umls", f"{_I}.umls:load", None, ("ingest/umls",),
                  "UMLS Metathesaurus relations across releases", IngestOptions(
    help="UMLS Metathesaurus relations (MRREL) with validity across releases, and concept names (MRCONSO).\n\n"
         "Each MRREL row 'CUI1|..|CUI2|..|RELA' (read right to left, as NLM documents it) becomes the fact "
         "'CUI2 RELA CUI1', valid from the first loaded release that holds it until the first later release that "
         "drops it. Load releases together or one at a time, oldest first, always with the same --sab/--rela "
         "filters. One transaction: bad input writes nothing.\n\n"
         "The UMLS is licensed (UMLS Metathesaurus License, free from NLM after sign-up), so there is no download "
         "command for it: get the release files from NLM yourself.",
    params=(paths("UMLS release folders named after the release (2020AA, 2021AB, ...), each holding MRREL.RRF and "
                  "MRCONSO.RRF directly or under META/", metavar="RELEASE_DIR...", to="folders"),
            Param(name="sab", kind="str", multiple=True, flags=("--sab",), to="sabs",
                  help="Keep only relations asserted by this source vocabulary (repeatable; default: all)"),
            Param(name="rela", kind="str", multiple=True, flags=("--rela",),
                  help="Keep only this relation (repeatable; default: the 12 ChroKnowBench relations)"),
            Param(name="all_relations", kind="bool", default=False, flags=("--all-relations",),
                  help="Keep every relation that has a RELA"),
            Param(name="release_date", kind="str", multiple=True, flags=("--release-date",),
                  metavar="RELEASE=DATE",
                  help="Exact release date (repeatable), e.g. 2020AA=2020-05-04 (default: AA = May 1st, AB = "
                       "November 1st, at month precision)")),
    prepare=f"{_I}.umls.cli_values:prepare", report=f"{_R}:umls")))
source(SourceSpec("cfr", "cfr", f"{_I}.cfr:load", f"{_C}.cfr", ("ingest/cfr", "download/cfr"),
                  "Code of Federal Regulations editions", IngestOptions(
    help="CFR editions: one fact per paragraph, valid until the edition that changes it (one transaction).",
    params=(paths("eCFR or annual-edition CFR XML files of whole titles"),
            Param(name="edition_date", kind="date", multiple=True, flags=("--edition-date",), metavar="DATE",
                  to="edition_dates",
                  help="Edition date, once per file in order or once for all (default: AMDDATE or REVISED in "
                       "the file)")))))
source(SourceSpec("chroknow", "chroknow", f"{_I}.chroknow:load", None, ("ingest/chroknow",),
                  "ChroKnowBench rows", IngestOptions(
    help="ChroKnowBench rows: yearly snapshots become facts with validity intervals (one transaction).",
    params=(paths("ChroKnowBench .jsonl files, or folders of them"),
            Param(name="domain", kind="enum", enum=f"{_I}.chroknow:Domain",
                  help="Read every file as this domain [default: detected from each file's fields]"),
            RELEASE_DATE))))
source(SourceSpec("driftmed", "driftmed", f"{_I}.driftmed:load", f"{_C}.driftmed",
                  ("ingest/driftmed", "download/driftmed"), "DriftMed recommendation pairs", IngestOptions(
    help="DriftMed pairs: the current recommendation and its superseded version (one transaction).",
    params=(paths("DriftMed .jsonl, .json, .csv or .parquet files, or folders"), RELEASE_DATE))))
source(SourceSpec("qa", "qa", f"{_I}.qasets:load", f"{_C}.qasets", ("ingest/qa", "ingest/qa-update"),
                  "QA benchmarks (SelfAware, TruthfulQA, TriviaQA, NQ, BoolQ)", IngestOptions(
    help="Questions with their gold answers, known from the benchmark's release (one transaction).",
    params=(paths("Benchmark files (.json, .jsonl, .csv) or folders"),
            Param(name="benchmark", kind="enum", enum=f"{_I}.qasets:Benchmark",
                  help="Read every file as this benchmark [default: detected from each file]"),
            RELEASE_DATE))))
source(SourceSpec("cxr", "cxr", f"{_I}.cxr:load", f"{_C}.cxr", ("ingest/cxr", "generate/cxr"),
                  "Chest X-ray scene-graph timelines", IngestOptions(
    help="MIMIC-Ext-CXR-QBA scene graphs as patient timelines, and MI-CXR questions (one transaction).",
    params=(paths("Folders or files: *.scene_graph.json (+ sibling *.metadata.json), study_metadata.csv[.gz], "
                  "MI-CXR question .jsonl"),
            RELEASE_DATE, Param(name="base_date", kind="date", help=DATE_HELP),
            Param(name="allow_unmatched", kind="bool", default=False,
                  help="Keep questions whose images match no loaded study (attached to the studies that match)")),
    report=f"{_R}:cxr")))
source(SourceSpec("public", "public", f"{_I}.public:PUBLIC_FILES", f"{_C}.public",
                  ("download/tempomed", "download/selfaware", "download/truthfulqa"),
                  "Pinned public files"))

__all__ = ["SOURCES", "SourceSpec", "source"]

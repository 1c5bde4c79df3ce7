"""What an exported dataset folder holds (its split, its columns, the `Export` describing it) and how it is described:
the dataset card (`README.md`), whose YAML front matter `datasets` and the Hub read (`configs` with their
`data_files`, `dataset_info` with the features and row counts), chronokg's own block (`chronokg`: the snapshot and
its releases, each source's licence, the seed papers) and the same said in prose; and `croissant.json` (Croissant
1.0).

Licences are those of the published sources, by the `Source.kind` a loader gives its releases; a kind not listed
here is said to be unknown rather than guessed. Nothing in either file depends on when it was written.
"""

from __future__ import annotations

import html
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SPLIT = "test"
CANONICAL = ("id", "input", "choices", "target", "metadata")
# An item's dates, as every route names them (defined in `chronokg.eval.item_dates`, which computes them).
DATES = ("question_date", "gold_valid_from", "gold_valid_to", "evidence_known_from")
COLUMNS = (*CANONICAL, "variant", *DATES)


@dataclass
class Release:
    """A source release of a snapshot, as the card lists it."""

    id: str
    kind: str | None = None
    caption: str | None = None
    version: str | None = None
    release_date: str | None = None


@dataclass
class Export:
    """What `export_hf` wrote: rows per config, the snapshots and their releases, the families."""

    folder: Path
    configs: dict[str, int]
    snapshots: dict[str, list[Release]]
    families: list[str]
    sizes: dict[str, int] = field(default_factory=dict)  # bytes of each config's rows in Arrow (`num_bytes`)
    files: list[Path] = field(default_factory=list)


# The licence of each kind of source, as published (docs/benchmarks/*.md and the sources' own pages).
LICENCES: dict[str, str] = {
    "tempomed": "MIT (GuanZihan/TempoMed-Bench); paper CC BY 4.0",
    "chroknow": "CC BY 4.0 (dmis-lab/ChroKnowBench)",
    "driftmed": "not checked by chronokg: see RDBH/DriftMed's terms",
    "umls": "UMLS Metathesaurus License (NLM; free after sign-up, not redistributable)",
    "cfr": "public domain (U.S. Government work, 17 U.S.C. 105)",
    "wikidata": "CC0 1.0",
    "cxr": "PhysioNet Credentialed Health Data License 1.5.0 (MIMIC-CXR-JPG, MIMIC-Ext-CXR-QBA), except synthetic "
           "timelines (chronokg's cxr_synth: MIT)",
    "selfaware": "CC BY-SA 4.0 (data), Apache-2.0 (code)",
    "truthfulqa": "Apache-2.0",
    "triviaqa": "not checked by chronokg: see TriviaQA's terms",
    "nq": "not checked by chronokg: see Natural Questions' terms",
    "boolq": "not checked by chronokg: see BoolQ's terms",
    "qa_update": "the terms of the update file's own source",
    "chronokg-demo": "MIT (chronokg's self-authored demo corpus)",
}
UNKNOWN = "unknown: check the source's own terms"

# The seed benchmark of each family: licence of its code and data, and its paper.
SEEDS: dict[str, tuple[str, str]] = {
    "tempomed": ("code MIT, paper CC BY 4.0", """@article{guan2026tempomed,
  title={Large Language Models Lack Temporal Awareness of Medical Knowledge},
  author={Guan, Zihan and Jin, Qiao and Xiong, Guangzhi and Chen, Fangyuan and Hu, Mengxuan and Chen, Qingyu and
          Peng, Yifan and Lu, Zhiyong and Vullikanti, Anil},
  journal={arXiv preprint arXiv:2605.13045},
  year={2026}
}"""),
    "conflictmedqa": ("code without a licence file; data RDBH/DriftMed", """@inproceedings{wu2025conflictmedqa,
  title={Assessing and Mitigating Medical Knowledge Drift and Conflicts in Large Language Models},
  author={Wu, Weiyi and Xu, Xinwen and Gao, Chongyang and Diao, Xingjian and Li, Siting and Salas, Lucas A. and
          Gui, Jiang},
  booktitle={Findings of the Association for Computational Linguistics: EMNLP 2025},
  note={arXiv:2505.07968},
  year={2025}
}"""),
    "chroknow": ("code without a licence file; data CC BY 4.0", """@inproceedings{park2025chroknowledge,
  title={ChroKnowledge: Unveiling Chronological Knowledge of Language Models in Multiple Domains},
  author={Park, Yein and Yoon, Chanwoong and Park, Jungwoo and Lee, Donghyeon and Jeong, Minbyul and Kang, Jaewoo},
  booktitle={International Conference on Learning Representations (ICLR)},
  note={arXiv:2410.09870},
  year={2025}
}"""),
    "micxr": ("questions without a licence file; images PhysioNet Credentialed Health Data License 1.5.0",
              """@inproceedings{cho2026micxr,
  title={MI-CXR: A Benchmark for Longitudinal Reasoning over Multi-Interval Chest X-rays},
  author={Cho, Sunghwan Steve and Han, Yunseok and Do, Jaeyoung},
  booktitle={Findings of the Association for Computational Linguistics: ACL 2026},
  note={arXiv:2605.15574},
  year={2026}
}"""),
    "benchage": ("code without a licence file (all rights reserved)", """@misc{jiang2025benchmarksage,
  title={When Benchmarks Age: Temporal Misalignment through Large Language Model Factuality Evaluation},
  author={Jiang, Xunyi and Chang, Dingyi and McAuley, Julian and Xu, Xin},
  howpublished={\\url{https://github.com/JiangXunyi/BenchAge}},
  year={2025}
}"""),
}

COLUMN_MEANINGS: dict[str, str] = {
    "id": "the question's content id",
    "input": "the question as inspect_ai's multiple_choice() expects it (no option lines)",
    "choices": "the option texts in display order (empty for open questions)",
    "target": "the correct option's position as a letter (A = the first choice), or the answer text",
    "metadata": "the canonical record's metadata, as one JSON text (json.loads gives it back exactly)",
    "variant": "the family's variant of the question",
    "question_date": "the date the question asks about",
    "gold_valid_from": "when the gold answer's fact became valid (empty: the source gives no start)",
    "gold_valid_to": "when it stopped being valid (empty: still in force)",
    "evidence_known_from": "when the store first knew all of the question's evidence (the release that brought it)",
}


def features() -> list[dict[str, Any]]:
    """The features as `datasets` reads them from YAML (`sequence` for the list: read by every release)."""
    text = [{"name": n, "dtype": "string"} for n in ("id", "input")]
    return [*text, {"name": "choices", "sequence": "string"}, {"name": "target", "dtype": "string"},
            {"name": "metadata", "dtype": "string"}, {"name": "variant", "dtype": "string"},
            *[{"name": d, "dtype": "date32"} for d in DATES]]


def sources(export: Export) -> list[dict[str, Any]]:
    """Each kind of source the snapshots hold, its releases and its licence."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for releases in export.snapshots.values():
        for r in releases:
            if r.id not in by_kind[r.kind or "?"]:
                by_kind[r.kind or "?"].append(r.id)
    return [{"kind": kind, "licence": LICENCES.get(kind, UNKNOWN), "releases": sorted(ids)}
            for kind, ids in sorted(by_kind.items())]


def families(export: Export) -> list[dict[str, Any]]:
    from chronokg.bench.family import FAMILIES

    out = []
    for name in export.families:
        licence, citation = SEEDS.get(name, (UNKNOWN, ""))
        seed = FAMILIES.get(name).sources if name in FAMILIES.names() else ""
        out.append({"family": name, "seed": seed, "licence": licence, "citation": citation})
    return out


def front_matter(export: Export) -> dict[str, Any]:
    names = sorted(export.configs)
    return {
        "pretty_name": "chronokg questions, " + ", ".join(sorted(export.snapshots)),
        "license": "other",
        "license_name": "per source",
        "license_details": "The licence of each source is under chronokg.sources; of each seed benchmark under "
                           "chronokg.families.",
        "tags": ["chronokg", "temporal", "knowledge-cutoff"],
        "task_categories": ["question-answering", "multiple-choice"],
        "configs": [{"config_name": n, "data_files": [{"split": SPLIT, "path": f"{n}/{SPLIT}.parquet"}]}
                    for n in names],
        "dataset_info": [{"config_name": n, "features": features(),
                          "splits": [{"name": SPLIT, "num_bytes": export.sizes[n],
                                      "num_examples": export.configs[n]}]} for n in names],
        "chronokg": {
            "snapshots": [{"id": sid, "releases": [vars(r) for r in releases]}
                          for sid, releases in sorted(export.snapshots.items())],
            "sources": sources(export),
            "families": families(export),
            "columns": COLUMN_MEANINGS,
        },
    }


def _cell(value: Any) -> str:
    """Stored text as one Markdown table cell: every line break a space, HTML and `|` escaped, and a control or
    format character (a bidi override, an escape) shown as its code, so it cannot break or reorder the row."""
    if value is None:
        return ""
    text = " ".join(html.escape(str(value), quote=False).splitlines()).replace("|", "\\|")
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)


def card(export: Export) -> str:
    """The whole README.md: YAML front matter, then what it says for people."""
    import yaml

    meta = front_matter(export)
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=100)
    lines = ["---", head.rstrip("\n"), "---", "",
             "# chronokg questions", "",
             "Questions generated by chronokg from a bitemporal knowledge graph, each with the dates of its "
             "gold answer, so a split by a model's knowledge cutoff can be made where the results are read.", "",
             "```python", "from datasets import load_dataset",
             f'ds = load_dataset("path/to/this/folder", "{sorted(export.configs)[0]}", split="test")', "```", "",
             "## Configs", "", "| config | questions |", "|---|---|"]
    lines += [f"| {name} | {n} |" for name, n in sorted(export.configs.items())]
    lines += ["", "## Columns", "", "| column | meaning |", "|---|---|"]
    lines += [f"| {name} | {_cell(text)} |" for name, text in COLUMN_MEANINGS.items()]
    lines += ["", "## Sources and licences", "", "| source | licence | releases |", "|---|---|---|"]
    lines += [f"| {_cell(s['kind'])} | {_cell(s['licence'])} | {_cell(', '.join(s['releases']))} |"
              for s in sources(export)]
    for sid, releases in sorted(export.snapshots.items()):
        lines += ["", f"## Snapshot {sid}", "", "| release | kind | version | release date | caption |",
                  "|---|---|---|---|---|"]
        lines += [f"| {_cell(r.id)} | {_cell(r.kind)} | {_cell(r.version)} | {_cell(r.release_date)} | "
                  f"{_cell(r.caption)} |" for r in releases]
    lines += ["", "## Seed benchmarks and citations"]
    for f in families(export):
        lines += ["", f"### {f['family']}", "", f"{f['seed']} (licence: {f['licence']})"]
        if f["citation"]:
            lines += ["", "```bibtex", f["citation"], "```"]
    return "\n".join(lines) + "\n"


CROISSANT_CONTEXT: dict[str, Any] = {  # Croissant 1.0's context, as the specification gives it
    "@language": "en", "@vocab": "https://schema.org/", "citeAs": "cr:citeAs", "column": "cr:column",
    "conformsTo": "dct:conformsTo", "cr": "http://mlcommons.org/croissant/", "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"}, "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/", "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract", "field": "cr:field", "fileProperty": "cr:fileProperty", "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet", "format": "cr:format", "includes": "cr:includes", "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath", "key": "cr:key", "md5": "cr:md5", "parentField": "cr:parentField",
    "path": "cr:path", "recordSet": "cr:recordSet", "references": "cr:references", "regex": "cr:regex",
    "repeated": "cr:repeated", "replace": "cr:replace", "samplingRate": "cr:samplingRate", "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source", "subField": "cr:subField", "transform": "cr:transform",
}
CROISSANT_TYPES = {"string": "sc:Text", "date32": "sc:Date"}


def croissant(export: Export, digests: dict[str, str]) -> str:
    """The folder in Croissant 1.0 (`croissant.json`): each config's parquet file (`digests`: its sha256) and a
    record set of its columns; the licence and citations as the card gives them."""
    import json

    releases = [r.release_date for rs in export.snapshots.values() for r in rs if r.release_date]
    files, sets = [], []
    for name in sorted(export.configs):
        path = f"{name}/{SPLIT}.parquet"
        files.append({"@type": "cr:FileObject", "@id": path, "name": path, "contentUrl": path,
                      "encodingFormat": "application/x-parquet", "sha256": digests[path]})
        fields = []
        for f in features():
            dtype = f.get("dtype", f.get("sequence"))
            field: dict[str, Any] = {"@type": "cr:Field", "@id": f"{name}/{f['name']}", "name": f"{name}/{f['name']}",
                     "description": COLUMN_MEANINGS[f["name"]], "dataType": CROISSANT_TYPES[str(dtype)],
                     "source": {"fileObject": {"@id": path}, "extract": {"column": f["name"]}}}
            if "sequence" in f:
                field["repeated"] = True
            fields.append(field)
        sets.append({"@type": "cr:RecordSet", "@id": name, "name": name,
                     "description": f"{export.configs[name]} questions, split {SPLIT}", "field": fields})
    doc = {
        "@context": CROISSANT_CONTEXT, "@type": "sc:Dataset", "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": "chronokg-questions", "description": "Questions generated by chronokg from a bitemporal knowledge "
        "graph at " + ", ".join(sorted(export.snapshots)) + ", each with the dates of its gold answer.",
        "license": [f"{s['kind']}: {s['licence']}" for s in sources(export)],
        "citeAs": "\n\n".join(f["citation"] for f in families(export) if f["citation"]),
        "datePublished": max(releases) if releases else None,
        "keywords": ["chronokg", *sorted(export.snapshots)],
        "distribution": files, "recordSet": sets,
    }
    return json.dumps({k: v for k, v in doc.items() if v is not None}, ensure_ascii=False, indent=2) + "\n"

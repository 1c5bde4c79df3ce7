"""One folder of `chronokg bench export --format hf` read three ways, with the real libraries: Hugging Face
`datasets.load_dataset(DIR, CONFIG)`, inspect_ai's `hf_dataset` (with a record_to_sample), and lm-evaluation-harness
through a task YAML naming the folder as `dataset_path` and the config as `dataset_name`; each gives back every
canonical record, field for field, with its dates. Also on the real TempoMed sample (ingested, then generated)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.hf import DATES, folder_rows
from chronokg.bench.question import write_jsonl
from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from tests.test_bench_hf import canonical, every_family

pytestmark = pytest.mark.slow  # datasets, inspect_ai and lm-eval: seconds to import and to read

if not os.environ.get("CI"):
    pytest.importorskip("datasets", reason="the integrations extra (datasets) is not installed")


@pytest.fixture(scope="module")
def exported(demo_built: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The demo's questions of every family, exported: (folder, canonical records)."""
    root = tmp_path_factory.mktemp("hf-readers")
    with KgliteStore(demo_built, read_only=True) as store:
        qs = every_family(store)
    write_jsonl(root / "questions.jsonl", qs)
    done = CliRunner().invoke(app, ["--store", f"kglite://{demo_built}", "bench", "export", "--format", "hf",
                                    str(root / "questions.jsonl"), "--out", str(root / "dataset")])
    assert done.exit_code == 0, done.output
    return root / "dataset", canonical(root / "questions.jsonl")


def configs(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def by_config(records: list[dict[str, Any]], config: str) -> list[dict[str, Any]]:
    return [r for r in records if f"{r['metadata']['family']}-{r['metadata']['generator']['options']['protocol']}"
            == config]


def same_rows(rows: list[dict[str, Any]], records: list[dict[str, Any]], dates: list[dict[str, Any]]) -> None:
    """Every row read is its canonical record (metadata decoded) and carries the folder's dates."""
    assert len(rows) == len(records) == len(dates) > 0
    for row, record, expected in zip(rows, records, dates, strict=True):
        metadata = row["metadata"] if isinstance(row["metadata"], dict) else json.loads(row["metadata"])
        assert {k: row[k] for k in ("id", "input", "choices", "target")} | {"metadata": metadata} == record
        assert json.dumps(metadata) == json.dumps(record["metadata"])
        assert row["variant"] == record["metadata"]["variant"]
        assert {d: row[d] for d in DATES} == {d: expected[d] for d in DATES}
        assert all(v is None or type(v) is dt.date for v in (row[d] for d in DATES))


def test_datasets_load_dataset_gives_the_canonical_rows(exported: tuple[Path, list[dict[str, Any]]],
                                                        tmp_path: Path) -> None:
    import datasets

    folder, records = exported
    for config in configs(folder):
        loaded = datasets.load_dataset(str(folder), config, cache_dir=str(tmp_path / "cache"))
        assert list(loaded) == ["test"]
        ds = loaded["test"]
        assert ds.features["gold_valid_from"] == datasets.Value("date32")
        assert ds.features["choices"] == datasets.List(datasets.Value("string"))
        same_rows(ds.to_list(), by_config(records, config), list(folder_rows(folder, config)))
    assert sum(len(by_config(records, c)) for c in configs(folder)) == len(records)


def record_to_sample(record: dict[str, Any]) -> Any:
    """What the docs show: the canonical fields as inspect's Sample, the metadata decoded (it holds the variant), the
    dates beside it."""
    from inspect_ai.dataset import Sample

    metadata = {**json.loads(record["metadata"]), **{d: record[d] for d in DATES}}
    return Sample(id=record["id"], input=record["input"], choices=record["choices"] or None,
                  target=record["target"], metadata=metadata)


def test_inspect_hf_dataset_reads_the_folder(exported: tuple[Path, list[dict[str, Any]]], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("inspect_ai", reason="the integrations extra (inspect_ai) is not installed")
    from inspect_ai.dataset import hf_dataset

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # inspect's own copy of what it loaded
    folder, records = exported
    for config in configs(folder):
        samples = list(hf_dataset(str(folder), split="test", name=config, sample_fields=record_to_sample,
                                  cached=False, cache_dir=str(tmp_path / "cache")))
        rows = []
        for s in samples:
            meta = dict(s.metadata or {})
            rows.append({"id": s.id, "input": s.input, "choices": s.choices or [], "target": s.target,
                         "metadata": {k: v for k, v in meta.items() if k not in DATES}, "variant": meta["variant"],
                         **{d: meta[d] for d in DATES}})
        same_rows(rows, by_config(records, config), list(folder_rows(folder, config)))


TASK = """task: {name}
dataset_path: {folder}
dataset_name: {config}
dataset_kwargs:
  cache_dir: {cache}
test_split: test
output_type: {output_type}
doc_to_text: "{{{{input}}}}"
{choice}doc_to_target: "{target}"
metric_list:
  - metric: {metric}
metadata:
  version: 1.0
"""


def test_lm_eval_reads_the_folder_through_dataset_path(exported: tuple[Path, list[dict[str, Any]]],
                                                       tmp_path: Path) -> None:
    pytest.importorskip("lm_eval", reason="the integrations extra (lm-eval) is not installed")
    from lm_eval.tasks import TaskManager

    folder, records = exported
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    names = {}
    for config in configs(folder):
        name = "chronokg_hf_" + config.replace("-", "_")
        open_ended = not all(r["choices"] for r in by_config(records, config))  # ChroKnow mixes both kinds
        (tasks / f"{name}.yaml").write_text(TASK.format(
            name=name, folder=folder, config=config, cache=tmp_path / "cache",
            output_type="generate_until" if open_ended else "multiple_choice",
            choice="" if open_ended else 'doc_to_choice: "{{choices}}"\n',
            target="{{target}}" if open_ended else "{{'ABCDEFGHIJKLMNOPQRSTUVWXYZ'.index(target)}}",
            metric="exact_match" if open_ended else "acc"), encoding="utf-8")
        names[name] = config
    manager = TaskManager(include_path=str(tasks), include_defaults=False)
    loaded = manager.load(sorted(names))["tasks"]
    assert sorted(loaded) == sorted(names)
    choices_read = 0
    for name, config in names.items():
        task = loaded[name]
        docs = list(task.test_docs())
        expected = by_config(records, config)
        same_rows(docs, expected, list(folder_rows(folder, config)))
        for doc, record in zip(docs, expected, strict=True):
            assert task.doc_to_text(doc) == record["input"]
            if task.OUTPUT_TYPE == "multiple_choice":
                assert task.doc_to_choice(doc) == record["choices"]
                choices_read += 1
                assert task.doc_to_target(doc) == ord(record["target"]) - ord("A")
            else:
                assert task.doc_to_target(doc) == record["target"]
    assert choices_read == sum(len(by_config(records, c)) for c in ("conflictmedqa-seed", "micxr-seed",
                                                                    "tempomed-chronokg", "tempomed-seed"))


def test_the_real_tempomed_sample_round_trips(shared_data: Path, tmp_path: Path) -> None:
    """The real TempoMed sample, ingested and generated (its snapshot recorded), exported and loaded back."""
    import datasets

    from chronokg.ingest import tempomed

    store_path = tmp_path / "tempomed.kgl"
    with KgliteStore(store_path) as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
        sid = snapshot.record(store)
        qs = generate("tempomed", store, sid, {})[0]
    write_jsonl(tmp_path / "tempomed.jsonl", qs)
    for out in ("a", "b"):
        done = CliRunner().invoke(app, ["--store", f"kglite://{store_path}", "bench", "export", "--format", "hf",
                                        str(tmp_path / "tempomed.jsonl"), "--out", str(tmp_path / out)])
        assert done.exit_code == 0, done.output
    assert configs(tmp_path / "a") == ["tempomed-seed"]
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    ds = datasets.load_dataset(str(tmp_path / "a"), "tempomed-seed", split="test", cache_dir=str(tmp_path / "c"))
    records = canonical(tmp_path / "tempomed.jsonl")
    rows = ds.to_list()
    same_rows(rows, records, list(folder_rows(tmp_path / "a", "tempomed-seed")))
    assert len(rows) == 3354
    # every MCQ's gold answer is a dated guideline version: valid from its guideline's year, in force on the date
    # the question asks about; except where the seed's key and the graph disagree, which the cutoff split leaves
    # undated (`key_differs_from_graph`), and so do the dates
    differs = 0
    for row in rows:
        if "key_differs_from_graph" in (json.loads(row["metadata"]).get("quirks") or []):
            assert row["gold_valid_from"] is None and row["gold_valid_to"] is None
            differs += 1
            continue
        assert row["gold_valid_from"] is not None and row["gold_valid_from"] <= row["question_date"]
        assert row["gold_valid_to"] is None or row["gold_valid_to"] > row["question_date"]
    assert 0 < differs < len(rows) // 100


def test_mlcroissant_validates_the_croissant_file_and_reads_its_records(
        exported: tuple[Path, list[dict[str, Any]]]) -> None:
    pytest.importorskip("mlcroissant", reason="the integrations extra (mlcroissant) is not installed")
    import mlcroissant

    folder, records = exported
    dataset = mlcroissant.Dataset(jsonld=str(folder / "croissant.json"))  # raises on any validation error
    assert not dataset.metadata.ctx.issues.errors
    assert sorted(r.name for r in dataset.metadata.record_sets) == configs(folder)
    for config in ("tempomed-seed", "micxr-seed"):
        read = list(dataset.records(config))
        expected = by_config(records, config)
        assert [r[f"{config}/id"].decode() for r in read] == [r["id"] for r in expected]
        assert [[c.decode() for c in r[f"{config}/choices"]] for r in read] == [r["choices"] for r in expected]
        assert [json.loads(r[f"{config}/metadata"].decode()) for r in read] == [r["metadata"] for r in expected]
        dates = list(folder_rows(folder, config))
        assert [r[f"{config}/gold_valid_from"].date() for r in read] == [d["gold_valid_from"] for d in dates]

"""`eval export --format seed` of a TempoMed run on the real sample: the result records hold exactly the seed's
fields (`pubmed_evaluation_5_option.py` `run_choice_mode`; probes: `pubmed_inspect_questions.py`
`evaluate_questions`, `{**row, model fields}`), chronokg's question ids only in the side file, and the exported
files score back to the run's answers."""

from __future__ import annotations

import json
from pathlib import Path

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.family import generate
from chronokg.bench.question import write_jsonl
from chronokg.eval import runner
from chronokg.eval.log import latest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.metrics.runs import export_seed, score_outputs
from tests.helpers import result_ids
from tests.test_bench_tempomed_seed import ITEM_KEYS, PROBE_KEYS

MODEL = "baseline/random:3"
RESULT_KEYS = [*ITEM_KEYS, "model_answer", "prediction", "prediction_original_option", "prediction_group",
               "correct"]  # `run_choice_mode`: the item, then the model's fields
PROBE_RESULT_KEYS = [*PROBE_KEYS, "model_spec", "model_backend", "model_name", "prompt", "model_answer",
                     "prediction", "correct"]


def test_seed_result_files_hold_only_the_seeds_fields(shared_data: Path, tmp_path: Path) -> None:
    with KgliteStore(":memory:") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
        questions = generate("tempomed", store, snapshot.current(store), {"probes": True, "limit": 2})[0]
        qfile = tmp_path / "q.jsonl"
        write_jsonl(qfile, questions)
        folder, info = runner.prepare(tmp_path / "runs", [qfile], [runner.ModelEntry(spec=MODEL)],
                                      runner.RunOptions(cache=False, concurrency=8, write=False))
        runner.run(folder, info, runner.load_questions([qfile], None), store)
    samples = {r.question_id: r for r in latest(folder / "samples.jsonl").values()}
    out = tmp_path / "out"
    written = export_seed(folder, out)
    by_id = {q.id: q for q in questions}
    probe_file = out / "tempomed" / "baseline_random_3" / "evaluation_results.json"
    item_file = out / "tempomed" / f"evaluation_results_5_option_{MODEL.replace('/', '_').replace(':', '_')}" \
        "_augmented.json"
    assert set(written) == {probe_file, item_file, out / "tempomed" / "tempomed_chronokg_ids.jsonl"}
    # probe rows: the generated row (as `--format seed` writes it, same idx) then the model's fields
    write_seed("tempomed", questions, tmp_path / "seed")
    generated = [json.loads(x) for x in (tmp_path / "seed" / "tempomed_generated_questions.jsonl")
                 .read_text(encoding="utf-8").splitlines()]
    rows = json.loads(probe_file.read_text(encoding="utf-8"))
    ids = result_ids(out, "tempomed", probe_file)
    assert len(rows) == len(generated) == 2 * 2 * 27
    for row, qid, gen in zip(rows, ids, generated, strict=True):
        assert list(row) == PROBE_RESULT_KEYS
        assert {k: row[k] for k in PROBE_KEYS} == gen  # the same row, idx included
        assert (row["model_spec"], row["model_backend"], row["model_name"]) == (MODEL, "baseline", "random:3")
        assert row["prompt"] == by_id[qid].input and row["model_answer"] == samples[qid].output
        assert row["correct"] == (samples[qid].answer == by_id[qid].target == row["Answer"]["Correct"])
    items = json.loads(item_file.read_text(encoding="utf-8"))
    item_ids = result_ids(out, "tempomed", item_file)
    assert len(items) == len(item_ids) > 0 and all(list(r) == RESULT_KEYS for r in items)
    assert {*ids, *item_ids} == set(by_id)
    # both files score back to the run's answers without chronokg ids
    for path, expected in ((probe_file, ids), (item_file, item_ids)):
        scored = score_outputs(qfile, path, "rescored", "seed", tmp_path / "scored" / path.stem)
        got = {r.question_id: r.answer for r in latest(scored / "samples.jsonl").values()}
        assert got == {qid: samples[qid].answer for qid in expected}

"""`generate tempomed --format seed` against the real TempoMed sample: every item as the seed's evaluation script
(`P/evaluation/pubmed_evaluation_5_option.py`, `build_question_variants` -> `build_choice_mode_data` ->
`assign_variant_sub_indices` -> `run_choice_mode`) writes it, re-derived here from the released records."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.family import generate
from chronokg.bench.question import read_jsonl, write_jsonl
from chronokg.eval.log import latest
from chronokg.eval.profile import profile_for
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.ingest.common import read_json_blocks
from chronokg.metrics.runs import score_outputs

# `run_choice_mode`'s record keys, in its order (the 5-option script): nothing else (chronokg ids: the side file).
ITEM_KEYS = ["year_previous", "year_current", "target_guideline_year", "question_variant", "question", "choices",
             "option_order", "gold", "shuffle_method", "variant_sub_idx", "display_to_original_option",
             "original_to_display_option", "current_guideline_option", "prior_guideline_option",
             "interference_options", "unknown_option", "idx"]
METHODS = ["reorder_only", "shuffle_labels", "alternate_labels"]


def counterpart(stem: str, cur: int, prior: int) -> str:
    """`build_counterpart_question`, re-written from its description."""
    out, n = re.subn(rf"(issued in ){cur}(\b)", rf"\g<1>{prior}\2", stem, count=1)
    return out if n else re.sub(rf"\b{cur}\b", str(prior), stem, count=1)


@pytest.fixture(scope="module")
def exported(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict[str, Any]], Path]:
    path = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    released = [obj for _, _, obj in read_json_blocks(path)]
    with KgliteStore(":memory:") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
        items = generate("tempomed", store, snapshot.current(store), {})[0]
    folder = tmp_path_factory.mktemp("seed")
    write_seed("tempomed", items, folder)
    # The side file maps every item to its chronokg question, one to one.
    side = [json.loads(line) for line in (folder / "tempomed_chronokg_ids.jsonl").read_text().splitlines()]
    mapped = [r for r in side if r["file"] == "tempomed_items.json"]
    assert [r["record"] for r in mapped] == list(range(len(items)))
    assert sorted(i for r in mapped for i in r["chronokg_ids"]) == sorted(q.id for q in items)
    every_97th = {r["chronokg_ids"][0] for r in mapped[::97]}  # the questions of the join test, below
    write_jsonl(folder / "tempomed.jsonl", [q for q in items if q.id in every_97th])
    return released, folder


def test_every_item_holds_the_whole_released_question_and_the_seeds_fields(
        exported: tuple[list[dict[str, Any]], Path]) -> None:
    released, folder = exported
    rows = json.loads((folder / "tempomed_items.json").read_text(encoding="utf-8"))
    by_idx = {r["idx"]: r for r in released}
    multi = [r for r in released if "\n\n" in r["Question"]]
    assert multi, "the sample holds stems with blank lines: the case this test is for"
    assert len(rows) == 6 * len(released)
    # The seed's order: perturbation-major, then released record order, current before prior, one copy each.
    order = [r["idx"] for r in released]
    expected_order = [(m, i, v) for m in METHODS for i in order for v in ("current_guideline", "prior_guideline")]
    assert [(r["shuffle_method"], r["idx"], r["question_variant"]) for r in rows] == expected_order
    seen: dict[int, int] = {}
    for row in rows:
        assert list(row) == ITEM_KEYS
        rec = by_idx[row["idx"]]
        current = row["question_variant"] == "current_guideline"
        stem = rec["Question"] if current else counterpart(rec["Question"], rec["Year_current"], rec["Year_prior"])
        assert row["question"] == stem
        assert row["variant_sub_idx"] == seen.get(row["idx"], 0)
        seen[row["idx"]] = row["variant_sub_idx"] + 1
        assert (row["year_previous"], row["year_current"]) == (rec["Year_prior"], rec["Year_current"])
        assert row["target_guideline_year"] == (rec["Year_current"] if current else rec["Year_prior"])
        assert all(isinstance(row[k], int) for k in ("year_previous", "year_current", "target_guideline_year",
                                                      "variant_sub_idx", "idx"))
        answer = rec["Answer"]
        mapping = row["display_to_original_option"]
        assert row["option_order"] == list(row["choices"]) and row["gold"] in row["option_order"]
        assert {d: answer[f"Choice_{o}"] for d, o in mapping.items()} == row["choices"]
        assert mapping[row["gold"]] == ("A" if current else "B")
        assert row["original_to_display_option"] == {o: d for d, o in mapping.items()}
        inverse = row["original_to_display_option"]
        assert row["current_guideline_option"] == inverse["A"] and row["prior_guideline_option"] == inverse["B"]
        assert row["interference_options"] == [inverse["C"], inverse["D"]]
        assert row["unknown_option"] == inverse["E"] == "E"
    assert set(seen.values()) == {6}


def test_released_records_round_trip(exported: tuple[list[dict[str, Any]], Path]) -> None:
    released, folder = exported
    text = (folder / "tempomed_questions.jsonl").read_text(encoding="utf-8")
    blocks = [json.loads(b) for b in text.strip().split("\n\n") if b.strip()]  # the seed's `load_data`
    assert len(blocks) == len(released)
    for block, rec in zip(blocks, released, strict=True):
        assert block == rec and list(block) == list(rec)  # every released field, whole text included, no other


def test_the_seeds_result_rows_join_back_without_chronokg_ids(exported: tuple[list[dict[str, Any]], Path],
                                                                tmp_path: Path) -> None:
    """The seed's evaluation copies each item's fields into its result record (`run_choice_mode`) and adds the
    model's answer: `eval score` finds each row's question by (idx, shuffle_method, question_variant), the same
    question the side file names for that item."""
    _, folder = exported
    rows = json.loads((folder / "tempomed_items.json").read_text(encoding="utf-8"))[::97]
    side = {r["record"]: r["chronokg_ids"][0] for r in (json.loads(x) for x in (
        folder / "tempomed_chronokg_ids.jsonl").read_text().splitlines()) if r["file"] == "tempomed_items.json"}
    expected = [side[n] for n in range(0, len(side), 97)]
    qs = {q.id: q for q in read_jsonl(folder / "tempomed.jsonl")}
    profile = profile_for("tempomed")
    results = [{**row, "model_answer": profile.render(qs[qid], row["gold"])} for row, qid in zip(rows, expected,
                                                                                                  strict=True)]
    predictions = tmp_path / "evaluation_results_5_option_m_augmented.json"
    predictions.write_text(json.dumps(results), encoding="utf-8")
    run = score_outputs(folder / "tempomed.jsonl", predictions, "external", "seed", tmp_path / "runs")
    got = {r.question_id: r.correct for r in latest(run / "samples.jsonl").values()}
    assert len(rows) > 10 and got == dict.fromkeys(expected, True)


# `build_matrix_questions`' row keys in its order (`pubmed_inspect_questions.py`); those the store cannot know
# are null (docs/benchmarks.md).
UNKNOWABLE = ["experiment_index", "current_pmcid", "prior_pmcid", "target_pmcid", "target_title", "target_role",
              "target_status"]
PROBE_KEYS = ["idx", "experiment_index", "current_pmcid", "prior_pmcid", "pair_id", "difference_idx", "topic",
              "organization", "clinical_focus", "target_pmcid", "target_title", "target_year", "target_role",
              "target_status", "target_pmid", "statement_source", "statement_guideline_year",
              "statement_guideline_pmid", "statement_text", "question_target_year", "latest_guideline_year",
              "latest_guideline_pmid", "recommendation_source", "available", "Question", "Answer"]


def test_probe_rows_carry_the_seeds_fields(shared_data: Path, tmp_path: Path) -> None:
    """`tempomed_generated_questions.jsonl` against the released records: one `json.dumps` line per row
    (`write_jsonl`, non-ASCII kept), PMIDs and years of the record's two guidelines, and the year states of
    `build_year_states` re-derived here from those years."""
    path = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    released = [obj for _, _, obj in read_json_blocks(path)]
    with KgliteStore(":memory:") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
        probes = generate("tempomed", store, snapshot.current(store),
                          {"probes": True, "mcq": False, "limit": 2})[0]
    write_seed("tempomed", probes, tmp_path)
    text = (tmp_path / "tempomed_generated_questions.jsonl").read_text(encoding="utf-8")
    lines = text.splitlines()
    assert "\\u2013" not in text and "–" in text  # the released texts' en dash, kept as write_jsonl keeps it
    rows = [json.loads(line) for line in lines]
    assert len(rows) == len(probes) == 2 * 2 * 27 and [r["idx"] for r in rows] == list(range(len(rows)))
    by_pmids = {(str(r["PMID_prior"]), str(r["PMID_current"])): r for r in released}
    for row in rows:
        assert list(row) == PROBE_KEYS and [row[k] for k in UNKNOWABLE] == [None] * len(UNKNOWABLE)
        prior_pmid, current_pmid = row["pair_id"].rsplit(":", 1)[1].split(">")
        record = by_pmids[prior_pmid, current_pmid]
        prior, current = record["Year_prior"], record["Year_current"]
        own = prior if row["statement_source"] == "prior" else current
        own_pmid = int(prior_pmid if row["statement_source"] == "prior" else current_pmid)
        assert (row["target_year"], row["target_pmid"], row["statement_guideline_pmid"]) == (own, own_pmid, own_pmid)
        year = row["question_target_year"]
        state = ((None, None, None) if year < prior else (prior, int(prior_pmid), "prior") if year < current
                 else (current, int(current_pmid), "current"))
        assert (row["latest_guideline_year"], row["latest_guideline_pmid"], row["recommendation_source"]) == state
        expected = "C" if state[2] is None else "A" if state[2] == row["statement_source"] else "B"
        assert row["Answer"]["Correct"] == expected
        assert row["Question"].endswith(f"on or before {year}, do you agree with the statement that "
                                        f"{row['statement_text'].rstrip('.')}?")
        # The released records name no topic or clinical focus; the organization the loader takes from the stem.
        assert (row["topic"], row["clinical_focus"]) == (None, None)
        assert f"According to the {row['organization']} " in record["Question"]
    assert rows[20]["Answer"]["Explanation"] == (
        f"For year 2020, the latest available guideline is from {rows[20]['latest_guideline_year']}, and it agrees "
        f"with the statement drawn from the prior guideline ({rows[20]['target_year']}), so Choice_A is correct.")
    assert rows[0]["Answer"]["Explanation"] == (
        "For year 2000, there is no guideline available on or before that year, so Choice_C is correct.")

"""Metric values on degenerate inputs follow the seeds' own scripts (hand-computed rows)."""

from __future__ import annotations

from chronokg.metrics import benchage, chroknow, conflictmedqa, micxr, tempomed


def rows(**groups: int) -> list[dict[str, object]]:
    return [{"target": "up_to_date", "group": g, "n": n, "correct": n if g == "current_guideline" else 0}
            for g, n in groups.items()]


def test_table1_always_idk_gives_zero_over_valid_answers_as_the_seed_does() -> None:
    # `load_current_targeted_summary`: valid_predictions == 0 -> accuracy_valid 0.0 (not N/A)
    value, groups, _ = tempomed.TABLE1.finish(rows(unknown=12))
    assert value == 0.0 and groups["accuracy_valid"] == 0.0 and groups["share_unknown"] == 1.0
    value, groups, _ = tempomed.TABLE1.finish(rows(current_guideline=2, prior_guideline=1, unknown=1, invalid=2))
    assert value == 2 / 6 and groups["accuracy_valid"] == 2 / 3 and groups["share_invalid"] == 2 / 6


def test_table1_without_up_to_date_items_is_not_applicable() -> None:
    # the seed's script raises for a model without current_guideline rows; its table prints N/A
    value, groups, _ = tempomed.TABLE1.finish([{"target": "historical", "group": "unknown", "n": 3, "correct": 0}])
    assert value is None and groups == {"n": 0}


def test_accuracy_by_year_with_one_year_has_no_trend() -> None:
    # `create_figure` draws the trend only with two or more buckets
    _, groups, details = tempomed.ACCURACY_BY_YEAR.finish([{"year_current": 2019, "n": 4, "correct": 1}])
    assert groups["2019"]["accuracy"] == 0.25 and "trend" not in details and "mann_kendall" not in details


# --- ConflictMedQA (no seed metric code: the paper's Eqs. 1-4; undefined rates are None) -------------------------


def cmq_rows(*cells: tuple[str, str, int, int]) -> list[dict[str, object]]:
    """(version, factor, n, correct) rows as `_ecda_count` gives them (one change category, one disease group)."""
    return [{"version": v, "factor": f, "change_category": "Treatment Modality", "disease_group": "chronic",
             "n": n, "correct": c} for v, f, n, c in cells]


def test_conflictmedqa_ecda_with_one_version_only_leaves_the_other_rate_and_the_mean_undefined() -> None:
    rows = cmq_rows(("up_to_date", "recency", 4, 3), ("up_to_date", "no_factor", 2, 0))
    assert conflictmedqa.ECDA_ADH.finish(rows)[0] == 3 / 6
    value, groups, details = conflictmedqa.ECDA_REJ.finish(rows)
    assert value is None and groups["factor"] == {"Recency Bias": None, "No Bias": None}
    assert conflictmedqa.ECDA_ALL.finish(rows)[0] is None and details["pooled_accuracy"] == 3 / 6
    # A factor without scenarios is no group (not a 0): only the two present factors, in the seed's order.
    assert list(conflictmedqa.ECDA_ADH.finish(rows)[1]["factor"]) == ["Recency Bias", "No Bias"]
    value, groups, _ = conflictmedqa.ECDA_ALL.finish([])
    assert value is None and groups == {"factor": {}, "change_category": {}, "disease_group": {}}


def test_conflictmedqa_ikcr_without_an_active_pair_is_undefined() -> None:
    # Two complete pairs, both versions rejected (no YES): no active pair, IKCR = 0 / 0 -> None.
    rows = [{"factor": "recency", "change_category": "Treatment Modality", "disease_group": "chronic", "pairs": 2,
             "incomplete": 1, "active": 0, "conflicts": 0}]
    value, groups, details = conflictmedqa.IKCR.finish(rows)
    assert value is None and groups["factor"] == {"Recency Bias": None}
    assert (details["pairs"], details["incomplete"], details["active"]) == (2, 1, 0)
    rows[0].update(active=2, conflicts=1)
    assert conflictmedqa.IKCR.finish(rows)[0] == 0.5


# --- ChroKnow (`sources/process.py` classify_knowledge_fuzz / classify_results_time_fine_graining) --------------


def check_rows(*years: tuple[int, int, int, int]) -> list[dict[str, object]]:
    """(year, greedy parsed answers, greedy right, sampled right) for one fact under the seed protocol."""
    out: list[dict[str, object]] = []
    for year, greedy, right, sampled in years:
        base = {"template": "generation", "domain": "General", "split": "Dynamic", "fact_key": "f1", "year": year,
                "protocol": "seed"}
        out.append({**base, "decoding": "greedy", "parsed": True, "n": greedy, "correct": right})
        out.append({**base, "decoding": "greedy", "parsed": False, "n": 5 - greedy, "correct": 0})
        out.append({**base, "decoding": "sampled", "parsed": True, "n": 5, "correct": sampled})
    return out


def test_chroknow_one_year_facts_follow_the_seeds_rules() -> None:
    # One year: all(correct) -> Known, all(incorrect) -> Unknown, a partial year -> Partial_known (no transition).
    assert chroknow.FACT_SPLIT.finish(check_rows((2020, 5, 5, 0)))[2]["Known"] == 1
    assert chroknow.FACT_SPLIT.finish(check_rows((2020, 5, 0, 0)))[2]["Unknown"] == 1
    assert chroknow.FACT_SPLIT.finish(check_rows((2020, 5, 2, 0)))[2]["Partial_known"] == 1
    # No parsed greedy answer (seed: dropped) -> the sampled branch: partial_correct2 if a sampled one matches.
    value, groups, details = chroknow.YEAR_SPLIT.finish(check_rows((2020, 0, 0, 1)))
    assert value == 0.0 and details["partial_correct2"] == 1
    assert groups["generation/General/Dynamic"]["2020"]["percent_partial"] == 100.0
    assert chroknow.YEAR_SPLIT.finish(check_rows((2020, 0, 0, 0)))[2]["incorrect"] == 1
    # Nothing to classify: no value (the seed's counters stay empty).
    assert chroknow.YEAR_SPLIT.finish([])[0] is None and chroknow.FACT_SPLIT.finish([])[0] is None


# --- MI-CXR (no seed code: accuracy = correct / all, §4.1) -------------------------------------------------------


def test_micxr_empty_groups_are_absent_and_no_items_give_no_accuracy() -> None:
    rows = [{"task_family": "TEL", "qtype": "single_emergence", "table1_column": "TEL Single (E/R)", "n": 4,
             "correct": 1}]
    value, groups, details = micxr.SINGLE[0].finish(rows)
    assert value == 0.25 and list(groups) == ["TEL"] and details["chance"] == 0.2
    value, groups, details = micxr.SINGLE[2].finish(rows)
    assert value == 0.25 and list(groups) == ["TEL Single (E/R)", "Overall"]
    assert details["mean_of_columns"] == details["mean_of_families"] == 0.25
    value, groups, details = micxr.SINGLE[2].finish([])
    assert value is None and groups == {"Overall": {"n": 0, "correct": 0, "accuracy": None, "wilson95": [0.0, 0.0]}}
    assert details["mean_of_columns"] is None
    assert micxr.SINGLE[3].finish([])[0] is None and micxr.STAGE1.finish([])[0] is None  # answers, stage 1


# --- BenchAge (`src/evaluator/evaluator.py` summarise_and_write: NaN where the seed divides by zero) ------------


def aging_rows(*cells: tuple[str, object, object, object, int]) -> list[dict[str, object]]:
    """(pool, s_gold, s_search, gs, n) rows of one dataset."""
    return [{"dataset": "SelfAware", "pool": p, "s_gold": g, "s_search": s, "gs": gs, "n": n}
            for p, g, s, gs, n in cells]


def test_benchage_without_time_sensitive_questions_only_a_o_is_defined() -> None:
    # n_ts = 0: acc_ts, acc_search_ts, accuracy_diff and kappa are NaN in the seed (None here); acc_overall is
    # the non-TS accuracy.
    rows = aging_rows(("non_ts", 1, None, None, 3), ("non_ts", 0, None, None, 1))
    for spec in (benchage.BF, benchage.TA, benchage.TAG, benchage.KAPPA, benchage.A_TAG, benchage.EMR):
        assert spec.finish(rows)[0] is None, spec.name
    assert benchage.A_O.finish(rows)[0] == 3 / 4
    assert benchage.A_O.finish([])[0] is None


def test_benchage_kappa_of_a_constant_pair_is_nan_and_left_out_of_the_mean() -> None:
    # Gold, search and gs all 1 for every question: every pair has p_e = 1, sklearn gives NaN for each, the mean
    # is NaN. With the model wrong on one of four (gold 0 there): k1 = k2 = 0 (one rater constant), k3 NaN.
    assert benchage.KAPPA.finish(aging_rows(("ts", 1, 1, 1, 4)))[0] is None
    value, _, details = benchage.KAPPA.finish(aging_rows(("ts", 1, 1, 1, 3), ("ts", 0, 1, 1, 1)))
    assert details["k3_gs_search"] is None and details["k1_gold_search"] == details["k2_gs_gold"] == 0.0
    assert value == 0.0
    # A judge failure (None) counts in n_ts as the seed's nansum does (wrong), and is left out of kappa.
    rows = aging_rows(("ts", 1, 1, 1, 2), ("ts", None, 1, 1, 2))
    assert benchage.BF.finish(rows)[0] == 2 / 4 and benchage.KAPPA.finish(rows)[2]["n_kappa"] == 2

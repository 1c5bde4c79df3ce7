"""Metric values on degenerate inputs follow the seeds' own scripts (hand-computed rows)."""

from __future__ import annotations

from chronokg.metrics import tempomed


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

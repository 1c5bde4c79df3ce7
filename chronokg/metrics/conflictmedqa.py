"""ConflictMedQA metrics as the paper defines them (Wu et al., Findings of EMNLP 2025, §3.2 Eqs. 1-4).

- ECDA_adh (Eq. 1): share of the up-to-date scenarios the model endorses (answers YES);
- ECDA_rej (Eq. 2): share of the outdated scenarios it rejects (answers NO);
- ECDA_all (Eq. 3): (ECDA_adh + ECDA_rej) / 2, the mean of the two rates, not pooled accuracy (they differ as
  soon as the two halves have different sizes: a dropped scenario, failed samples);
- IKCR (Eq. 4): over the pairs (concept x factor, each with its up-to-date and its outdated scenario) in which
  the model endorses at least one version, the share in which it endorses both; pooled over every pair of the
  slice (the paper's Table 5 value is the pooled one, not the mean of the per-factor values). Only complete
  pairs (one answer to each version) count; incomplete ones are reported. No active pair: undefined (None).

Each is given overall (`value`) and by factor, change category and disease group (`groups[slice][name]`, the
factor by the seed's `bias_type` string), with the counts in `details`. With several samples per question,
sample k of the up-to-date scenario pairs with sample k of the outdated one. The seed's code computes none of
these (its repository stops at the prediction CSVs); the checks against the paper's own tables are in
docs/metrics/conflictmedqa.md.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chronokg.bench.families.conflictmedqa import CATEGORIES, DISEASE_GROUPS, FACTORS
from chronokg.eval.log import SampleRecord
from chronokg.metrics.spec import MetricSpec, Rows, count_by, counted_by, prediction_match, register

FAMILY = "conflictmedqa"
UP_TO_DATE, OUTDATED = "up_to_date", "outdated"
SLICES = ("factor", "change_category", "disease_group")
BASE = prediction_match() + " AND p.family = 'conflictmedqa'"
_ORDER: dict[str, tuple[str, ...]] = {"factor": tuple(f.key for f in FACTORS), "change_category": CATEGORIES,
                                      "disease_group": DISEASE_GROUPS}
_FACTOR_NAME = {f.key: f.seed for f in FACTORS}

Finish = tuple[float | None, dict[str, Any], dict[str, Any]]


def _params(run: str, model: str) -> dict[str, Any]:
    return {"run": run, "model": model}


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _name(slice_: str, key: Any) -> str:
    return _FACTOR_NAME.get(key, str(key)) if slice_ == "factor" else str(key)


def _sliced(rows: Rows, zero: Callable[[], dict[str, int]], add: Callable[[dict[str, int], dict[str, Any]], None],
            weight: Callable[[dict[str, Any]], int]
            ) -> tuple[dict[str, int], dict[str, dict[str, dict[str, int]]], dict[str, int]]:
    """Counts overall and per slice value (canonical order: the paper's, then any other name sorted); rows
    without a value for a slice (TempoMed pairs have no change category) are counted apart."""
    overall = zero()
    by: dict[str, dict[Any, dict[str, int]]] = {s: {} for s in SLICES}
    unassigned = dict.fromkeys(SLICES, 0)
    for r in rows:
        add(overall, r)
        for s in SLICES:
            if r.get(s) is None:
                unassigned[s] += weight(r)
                continue
            add(by[s].setdefault(r[s], zero()), r)
    ordered: dict[str, dict[str, dict[str, int]]] = {}
    for s in SLICES:
        known = [k for k in _ORDER[s] if k in by[s]]
        rest = sorted((k for k in by[s] if k not in _ORDER[s]), key=str)
        ordered[s] = {_name(s, k): by[s][k] for k in (*known, *rest)}
    return overall, ordered, unassigned


# --- ECDA ------------------------------------------------------------------------------------------------------


def _ecda_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, ("version", *SLICES), lambda s: True)


_ecda_cypher = counted_by(BASE, ("version", "factor", "change_category", "disease_group"))


def _ecda_zero() -> dict[str, int]:
    return {"n_up_to_date": 0, "endorsed": 0, "n_outdated": 0, "rejected": 0}


def _ecda_add(cell: dict[str, int], r: dict[str, Any]) -> None:
    if r["version"] == UP_TO_DATE:
        cell["n_up_to_date"] += r["n"]
        cell["endorsed"] += r["correct"]  # correct on an up-to-date scenario = YES
    elif r["version"] == OUTDATED:
        cell["n_outdated"] += r["n"]
        cell["rejected"] += r["correct"]  # correct on an outdated scenario = NO


def ecda(cell: dict[str, int]) -> dict[str, float | None]:
    """ECDA_adh, ECDA_rej, ECDA_all (their mean; None unless both are defined) and pooled accuracy of counts."""
    adh = _rate(cell["endorsed"], cell["n_up_to_date"])
    rej = _rate(cell["rejected"], cell["n_outdated"])
    return {"adh": adh, "rej": rej, "all": (adh + rej) / 2 if adh is not None and rej is not None else None,
            "pooled_accuracy": _rate(cell["endorsed"] + cell["rejected"], cell["n_up_to_date"] + cell["n_outdated"])}


def _ecda_finish(which: str) -> Callable[[Rows], Finish]:
    def finish(rows: Rows) -> Finish:
        overall, by, unassigned = _sliced(rows, _ecda_zero, _ecda_add, lambda r: int(r["n"]))
        groups = {s: {name: ecda(cell)[which] for name, cell in cells.items()} for s, cells in by.items()}
        details: dict[str, Any] = {**overall, **ecda(overall), "counts": by, "unassigned": unassigned}
        return ecda(overall)[which], groups, details
    return finish


ECDA_ADH = register(MetricSpec(
    "conflictmedqa.ecda_adh", FAMILY, "ECDA_adh (Eq. 1): share of up-to-date scenarios endorsed (YES); overall and "
    "by factor, change category and disease group.", True, _ecda_count, _ecda_finish("adh"), _ecda_cypher,
    kind="accuracy"))
ECDA_REJ = register(MetricSpec(
    "conflictmedqa.ecda_rej", FAMILY, "ECDA_rej (Eq. 2): share of outdated scenarios rejected (NO); overall and by "
    "factor, change category and disease group.", True, _ecda_count, _ecda_finish("rej"), _ecda_cypher,
    kind="accuracy"))
ECDA_ALL = register(MetricSpec(
    "conflictmedqa.ecda_all", FAMILY, "ECDA_all (Eq. 3): (ECDA_adh + ECDA_rej) / 2, the mean of the two rates (not "
    "pooled accuracy); overall and by slice.", True, _ecda_count, _ecda_finish("all"), _ecda_cypher, kind="accuracy"))


# --- IKCR ------------------------------------------------------------------------------------------------------


def _ikcr_count(samples: Sequence[SampleRecord]) -> Rows:
    """Per (concept x factor pair, sample): answers and YES to each version; then per slice combination: complete
    pairs, incomplete ones, active ones (a YES to either) and conflicts (YES to both)."""
    pairs: dict[tuple[Any, ...], dict[str, int]] = {}
    for s in samples:
        f = s.fields
        key = (f.get("ikcr_pair"), s.sample, *(f.get(k) for k in SLICES))
        cell = pairs.setdefault(key, {"n_up": 0, "yes_up": 0, "n_out": 0, "yes_out": 0})
        side = "up" if f.get("version") == UP_TO_DATE else "out" if f.get("version") == OUTDATED else None
        if side is not None:
            cell[f"n_{side}"] += 1
            cell[f"yes_{side}"] += s.answer == "YES"
    table: dict[tuple[Any, ...], dict[str, int]] = {}
    for key, c in pairs.items():
        out = table.setdefault(key[2:], {"pairs": 0, "incomplete": 0, "active": 0, "conflicts": 0})
        complete = c["n_up"] == 1 and c["n_out"] == 1
        out["pairs"] += complete
        out["incomplete"] += not complete
        out["active"] += complete and (c["yes_up"] > 0 or c["yes_out"] > 0)
        out["conflicts"] += complete and c["yes_up"] > 0 and c["yes_out"] > 0
    return [{**dict(zip(SLICES, key, strict=True)), **cell} for key, cell in table.items()]


def _ikcr_cypher(run: str, model: str) -> tuple[str, dict[str, Any]]:
    complete = "n_up = 1 AND n_out = 1"
    return (
        BASE + " WITH p.f_ikcr_pair AS pair, p.sample AS sample, p.f_factor AS factor,"
        " p.f_change_category AS change_category, p.f_disease_group AS disease_group,"
        " sum(CASE WHEN p.f_version = 'up_to_date' THEN 1 ELSE 0 END) AS n_up,"
        " sum(CASE WHEN p.f_version = 'outdated' THEN 1 ELSE 0 END) AS n_out,"
        " sum(CASE WHEN p.f_version = 'up_to_date' AND p.answer = 'YES' THEN 1 ELSE 0 END) AS yes_up,"
        " sum(CASE WHEN p.f_version = 'outdated' AND p.answer = 'YES' THEN 1 ELSE 0 END) AS yes_out"
        " RETURN factor, change_category, disease_group,"
        f" sum(CASE WHEN {complete} THEN 1 ELSE 0 END) AS pairs,"
        f" sum(CASE WHEN {complete} THEN 0 ELSE 1 END) AS incomplete,"
        f" sum(CASE WHEN {complete} AND (yes_up > 0 OR yes_out > 0) THEN 1 ELSE 0 END) AS active,"
        f" sum(CASE WHEN {complete} AND yes_up > 0 AND yes_out > 0 THEN 1 ELSE 0 END) AS conflicts",
        _params(run, model))


def _ikcr_zero() -> dict[str, int]:
    return {"pairs": 0, "incomplete": 0, "active": 0, "conflicts": 0}


def _ikcr_add(cell: dict[str, int], r: dict[str, Any]) -> None:
    for k in cell:
        cell[k] += int(r[k])


def _ikcr_finish(rows: Rows) -> Finish:
    overall, by, unassigned = _sliced(rows, _ikcr_zero, _ikcr_add, lambda r: int(r["pairs"]) + int(r["incomplete"]))
    groups = {s: {name: _rate(c["conflicts"], c["active"]) for name, c in cells.items()} for s, cells in by.items()}
    return _rate(overall["conflicts"], overall["active"]), groups, {**overall, "counts": by,
                                                                    "unassigned_pairs": unassigned}


IKCR = register(MetricSpec(
    "conflictmedqa.ikcr", FAMILY, "IKCR (Eq. 4): of the concept x factor pairs with at least one version endorsed, "
    "the share with both endorsed, pooled; overall and by slice (lower is better).", False, _ikcr_count,
    _ikcr_finish, _ikcr_cypher, kind="rate"))


# --- change category x factor (Appendix A.4.1, Figures 9-12) ----------------------------------------------------


def _cells(rows: Rows, zero: Callable[[], dict[str, int]], add: Callable[[dict[str, int], dict[str, Any]], None]
           ) -> dict[str, dict[str, dict[str, int]]]:
    """Counts per change category (the paper's order) and factor (the seed's order); rows without a category
    (TempoMed pairs) are left out."""
    by: dict[str, dict[str, dict[str, int]]] = {}
    for r in rows:
        if r.get("change_category") is None or r.get("factor") is None:
            continue
        add(by.setdefault(str(r["change_category"]), {}).setdefault(str(r["factor"]), zero()), r)
    cats = [c for c in CATEGORIES if c in by] + sorted(c for c in by if c not in CATEGORIES)
    order = _ORDER["factor"]
    return {c: {_FACTOR_NAME.get(f, f): by[c][f] for f in sorted(by[c], key=lambda f: (
        order.index(f) if f in order else len(order), f))} for c in cats}


def _ecda_cells(rows: Rows) -> Finish:
    cells = _cells(rows, _ecda_zero, _ecda_add)
    groups = {c: {f: {k: ecda(cell)[k] for k in ("adh", "rej", "all")} for f, cell in fs.items()}
              for c, fs in cells.items()}
    return None, groups, {"counts": cells}


def _ikcr_cells(rows: Rows) -> Finish:
    cells = _cells(rows, _ikcr_zero, _ikcr_add)
    return None, {c: {f: _rate(cell["conflicts"], cell["active"]) for f, cell in fs.items()}
                  for c, fs in cells.items()}, {"counts": cells}


ECDA_BY_CATEGORY_FACTOR = register(MetricSpec(
    "conflictmedqa.ecda_category_factor", FAMILY, "ECDA_adh, ECDA_rej and ECDA_all per change category x factor "
    "(the paper's Figures 9-11); a cell without scenarios of one version has None there.", True, _ecda_count,
    _ecda_cells, _ecda_cypher, kind="accuracy"))
IKCR_BY_CATEGORY_FACTOR = register(MetricSpec(
    "conflictmedqa.ikcr_category_factor", FAMILY, "IKCR per change category x factor (the paper's Figure 12); a "
    "cell without an active pair has None (lower is better).", False, _ikcr_count, _ikcr_cells, _ikcr_cypher,
    kind="rate"))

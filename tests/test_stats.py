"""The statistics behind the metrics, on cases computed by hand (values in the comments)."""

from __future__ import annotations

import math

import pytest

from chronokg.metrics.stats import bootstrap_ci, cohen_kappa, mann_kendall, ols, paired_comparison, wilson


def test_wilson_by_hand() -> None:
    # p = 0.5, n = 10: denominator 1.38416, margin 1.96 * sqrt(0.034604) / 1.38416 = 0.263413
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.236593, abs=1e-5) and hi == pytest.approx(0.763407, abs=1e-5)
    assert wilson(0, 0) == (0.0, 0.0)
    lo, hi = wilson(10, 10)  # clipped at 1
    assert hi == 1.0 and lo == pytest.approx(0.722467, abs=1e-5)


def test_ols_by_hand() -> None:
    trend = ols([2010, 2011, 2012, 2013], [0.9, 0.8, 0.7, 0.6])
    assert trend.slope == pytest.approx(-0.1) and trend.at(2010) == pytest.approx(0.9)
    assert trend.at(2025) == 0.0  # clipped to [0, 1], as TempoMed draws it
    with pytest.raises(ValueError):
        ols([1, 1], [0.1, 0.2])


def test_mann_kendall_by_hand() -> None:
    up = mann_kendall([1, 2, 3, 4, 5])  # S = 10, Var = 5*4*15/18 = 16.667, Z = 9/4.0825 = 2.2045
    assert up.s == 10 and up.var_s == pytest.approx(50 / 3) and up.z == pytest.approx(9 / math.sqrt(50 / 3))
    assert up.p == pytest.approx(0.02749, abs=1e-4) and up.trend == "increasing"
    tied = mann_kendall([1, 1, 2])  # S = 2, Var = (66 - 18)/18 = 2.667, Z = 1/1.633 = 0.6124
    assert tied.s == 2 and tied.var_s == pytest.approx(8 / 3) and tied.p == pytest.approx(0.5403, abs=1e-4)
    flat = mann_kendall([0.5, 0.5, 0.5])
    assert flat.s == 0 and flat.z == 0 and flat.p == 1.0 and flat.trend == "no trend"
    down = mann_kendall([0.9, 0.7, 0.8, 0.4, 0.3])  # S = -8
    assert down.s == -8 and down.z < 0


def test_mcnemar_and_paired_bootstrap() -> None:
    a = [True, True, True, False, True]
    b = [False, False, False, False, True]
    result = paired_comparison(a, b)
    assert (result.a_only, result.b_only) == (3, 0)
    assert result.p_mcnemar == pytest.approx(0.25)  # exact binomial: 2 * (1/2)^3
    assert result.difference == pytest.approx(0.6) and result.ci[0] <= 0.6 <= result.ci[1]
    same = paired_comparison(a, a)
    assert same.p_mcnemar == 1.0 and same.difference == 0


def test_kappa_by_hand() -> None:
    # observed 3/4, expected (2*1 + 2*3)/16 = 1/2 -> kappa = 0.5
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(0.5)
    assert cohen_kappa(["y", "n"], ["y", "n"]) == 1.0
    assert cohen_kappa([1, 1], [1, 1]) == 1.0


def test_bootstrap_clusters_widen_the_interval() -> None:
    values = [1.0] * 30 + [0.0] * 30
    clusters = [i // 3 for i in range(60)]  # triplets that always agree
    plain = bootstrap_ci(values, seed=1)
    clustered = bootstrap_ci(values, seed=1, clusters=clusters)
    assert plain[0] < 0.5 < plain[1] and clustered[0] < 0.5 < clustered[1]
    assert clustered[1] - clustered[0] > plain[1] - plain[0]

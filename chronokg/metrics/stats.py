"""The statistics the benchmark papers report, written once: intervals, trends, tests, agreement.

Each function says which seed it follows and how (formulas are facts of the benchmark). The numerics are
SciPy's (imported inside each function, so scoring code stays cheap to import); what SciPy does not decide
for us (a seed's z of 1.96, Mann-Kendall's continuity correction, cluster resampling) is written here.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the seeds use 1.96; `wilson` takes z


@functools.lru_cache(maxsize=1 << 16)  # pure; `eval compare` re-scores thousands of draws with the same (k, n)
def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials, clipped to [0, 1]; (0, 0) when n <= 0.

    TempoMed-Bench computes it identically in three scripts (`pubmed_plot_current_year_accuracy.py:71-82`,
    `pubmed_plot_target_variant_accuracy.py:64-71`, `pubmed_inspect_questions.py:1187-1198`), z = 1.96.
    SciPy's binomial interval takes a confidence level, so z = 1.96 becomes the level whose two-sided
    normal quantile is exactly 1.96 (0.950004…), not 0.95 (whose quantile is 1.95996…).
    """
    if n <= 0:
        return 0.0, 0.0
    from scipy.stats import binomtest, norm

    level = 1.0 - 2.0 * float(norm.sf(z))
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))


@dataclass(frozen=True)
class Trend:
    """An ordinary least-squares line y = slope * x + intercept."""

    slope: float
    intercept: float

    def at(self, x: float, clip: bool = True) -> float:
        y = self.slope * x + self.intercept
        return min(1.0, max(0.0, y)) if clip else y


def ols(xs: Sequence[float], ys: Sequence[float]) -> Trend:
    """Unweighted least squares (TempoMed's `np.polyfit(x, y, 1)` over bucket means); needs two distinct x."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("a trend needs at least two points")
    if len(set(xs)) < 2:
        raise ValueError("a trend needs two distinct x values")
    from scipy.stats import linregress

    fit = linregress(xs, ys)
    return Trend(slope=float(fit.slope), intercept=float(fit.intercept))


@dataclass(frozen=True)
class MannKendall:
    """Two-sided Mann-Kendall trend test: S, tie-corrected variance, continuity-corrected Z, p-value."""

    s: int
    var_s: float
    z: float
    p: float
    trend: str  # increasing | decreasing | no trend (at alpha = 0.05)


def normal_cdf(x: float) -> float:
    from scipy.stats import norm

    return float(norm.cdf(x))


def mann_kendall(ys: Sequence[float], alpha: float = 0.05) -> MannKendall:
    """The original Mann-Kendall test (the `pymannkendall.original_test` convention).

    S = sum over i < j of sign(y_j - y_i), read off SciPy's Kendall tau-b of y against time (time has no
    ties, so S = tau_b * sqrt(n0 * (n0 - n_y)) with n0 = n(n-1)/2 and n_y the tied pairs of y);
    Var(S) = [n(n-1)(2n+5) - sum_g t_g(t_g-1)(2t_g+5)] / 18 over groups of tied values;
    Z = (S - 1)/sqrt(Var) if S > 0, (S + 1)/sqrt(Var) if S < 0, else 0; p = 2(1 - Phi(|Z|)).
    SciPy's own Kendall p-value has no continuity correction, so Z and p follow pymannkendall here.
    TempoMed-Bench reports this test's p-value for accuracy by year (paper section 4.1); its code is not
    public, so the convention is the standard one, as docs/metrics.md says.
    """
    from scipy.stats import kendalltau, norm

    n = len(ys)
    ties = Counter(ys).values()
    n0 = n * (n - 1) / 2
    n_y = sum(t * (t - 1) / 2 for t in ties)
    s = 0
    if n >= 2 and n0 > n_y:  # otherwise every pair is tied and tau is undefined: S = 0
        tau = float(kendalltau(range(n), list(ys), variant="b").statistic)
        s = round(tau * math.sqrt(n0 * (n0 - n_y)))
    var_s = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in ties)) / 18
    z = 0.0
    if var_s > 0 and s != 0:
        z = (s - (1 if s > 0 else -1)) / math.sqrt(var_s)
    p = float(2 * norm.sf(abs(z)))
    trend = "no trend" if p >= alpha else ("increasing" if z > 0 else "decreasing")
    return MannKendall(s=s, var_s=var_s, z=z, p=p, trend=trend)


def bootstrap_ci(values: Sequence[float], statistic: Callable[[Sequence[float]], float] | None = None,
                 iterations: int = 2000, seed: int = 0, level: float = 0.95,
                 clusters: Sequence[Hashable] | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of `statistic` (default: the mean) over `values` (SciPy's `bootstrap`).

    With `clusters` (e.g. the source MCQ of each perturbed item) whole clusters are resampled, so the
    three perturbations of one question do not count as three independent draws: SciPy resamples cluster
    indices and the statistic reads the values of the clusters drawn.
    """
    if not values:
        return 0.0, 0.0
    import numpy as np
    from scipy.stats import bootstrap

    stat = statistic or (lambda xs: sum(xs) / len(xs))
    if clusters is None:
        groups: list[list[float]] = [[v] for v in values]
    else:
        by: dict[Hashable, list[float]] = {}
        for c, v in zip(clusters, values, strict=True):
            by.setdefault(c, []).append(v)
        groups = list(by.values())
    if len(groups) < 2:  # one cluster: every resample is the data itself
        point = stat([v for g in groups for v in g])
        return point, point

    def drawn(idx: Sequence[int]) -> float:
        return stat([v for i in idx for v in groups[int(i)]])

    result = bootstrap((np.arange(len(groups)),), drawn, vectorized=False, n_resamples=iterations,
                       confidence_level=level, method="percentile", rng=np.random.default_rng(seed))
    ci = result.confidence_interval
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Paired:
    """A paired comparison of two runs on the same questions."""

    n: int
    a_only: int  # questions run A got right and run B wrong
    b_only: int
    difference: float  # accuracy(A) - accuracy(B)
    p_mcnemar: float
    ci: tuple[float, float]  # paired bootstrap interval of the difference


def paired_comparison(a: Sequence[bool], b: Sequence[bool], iterations: int = 2000, seed: int = 0) -> Paired:
    """McNemar's exact test (SciPy's two-sided binomial test on the discordant pairs) and a paired bootstrap
    of the difference."""
    if len(a) != len(b):
        raise ValueError("paired runs must score the same questions")
    from scipy.stats import binomtest

    n = len(a)
    a_only = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    d = a_only + b_only
    p = float(binomtest(min(a_only, b_only), d, 0.5).pvalue) if d else 1.0
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    lo, hi = bootstrap_ci(diffs, iterations=iterations, seed=seed)
    return Paired(n=n, a_only=a_only, b_only=b_only, difference=sum(diffs) / n if n else 0.0, p_mcnemar=p,
                  ci=(lo, hi))


@dataclass(frozen=True)
class PairedDraws:
    """One quantity of a paired comparison by resampling: observed difference A - B, the paired permutation
    test's two-sided p and the paired percentile-bootstrap 95 % interval of the difference."""

    difference: float
    p: float
    ci: tuple[float, float]
    draws: int  # how many draws gave the quantity (a resample can leave a group empty)


def paired_draws(n: int, differences: Callable[[Sequence[int], Sequence[bool]], dict[str, float]],
                 iterations: int = 1000, seed: int = 0) -> dict[str, PairedDraws]:
    """Paired tests of every quantity a metric yields, from one set of draws over the n paired questions.

    `differences(indices, swapped)` gives A - B per quantity on the questions `indices` (repeats allowed), with
    A's and B's answers exchanged where `swapped`. The permutation test flips each pair with probability 1/2
    (the sign-flip test for paired data) and counts |d| >= |observed|, p = (1 + count) / (1 + draws), as
    SciPy's `permutation_test(permutation_type="samples")` does; the interval resamples questions with their
    pair kept together, percentile method, as `bootstrap_ci`. SciPy's two functions take one scalar statistic
    and draw anew for each, but a metric yields several values from one costly computation, so the draws are
    made once here and shared by all of them (numpy's generator, seeded: the same result every run).
    """
    import numpy as np

    every = list(range(n))
    observed = differences(every, [False] * n)
    if n == 0:
        return {}
    rng = np.random.default_rng(seed)
    flipped: dict[str, list[float]] = {k: [] for k in observed}
    boot: dict[str, list[float]] = {k: [] for k in observed}
    for _ in range(iterations):
        for key, d in differences(every, [bool(x) for x in rng.random(n) < 0.5]).items():
            if key in flipped and math.isfinite(d):
                flipped[key].append(d)
        for key, d in differences([int(i) for i in rng.integers(0, n, n)], [False] * n).items():
            if key in boot and math.isfinite(d):
                boot[key].append(d)
    out = {}
    for key, d in observed.items():
        if not math.isfinite(d):
            continue
        extreme = sum(1 for x in flipped[key] if abs(x) >= abs(d) - 1e-12)
        p = min(1.0, (1 + extreme) / (1 + len(flipped[key])))
        drawn = boot[key]
        lo, hi = (float(np.percentile(drawn, 2.5)), float(np.percentile(drawn, 97.5))) if drawn else (d, d)
        out[key] = PairedDraws(difference=d, p=p, ci=(lo, hi), draws=len(drawn))
    return out


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two raters' labels (1 for perfect agreement, 0 for chance); 1.0 if both are constant
    and equal, 0.0 if expected agreement is 1 but they differ.

    Ours, not scikit-learn's `cohen_kappa_score`: neither SciPy nor our dependencies have it, and the six lines
    would cost scikit-learn. (BenchAge's seed-exact kappa, NaN in that case, is `metrics.benchage.kappa`.)
    """
    if len(a) != len(b) or not a:
        raise ValueError("kappa needs two label lists of the same, non-zero length")
    n = len(a)
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    if expected == 1:
        return 1.0 if observed == 1 else 0.0
    return (observed - expected) / (1 - expected)

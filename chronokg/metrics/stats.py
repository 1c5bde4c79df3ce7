"""The statistics the benchmark papers report, written once: intervals, trends, tests, agreement.

Each function says which seed it follows and how (formulas are facts of the benchmark; the code is
ours). Pure Python: no numpy or scipy is needed to score a run.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054  # the seeds use 1.96; `wilson` takes z


def wilson(k: float, n: float, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials, clipped to [0, 1]; (0, 0) when n <= 0.

    TempoMed-Bench computes it identically in three scripts (`pubmed_plot_current_year_accuracy.py:71-82`,
    `pubmed_plot_target_variant_accuracy.py:64-71`, `pubmed_inspect_questions.py:1187-1198`), z = 1.96.
    """
    if n <= 0:
        return 0.0, 0.0
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, center - margin), min(1.0, center + margin)


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
    n = len(xs)
    if n != len(ys) or n < 2:
        raise ValueError("a trend needs at least two points")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        raise ValueError("a trend needs two distinct x values")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return Trend(slope=slope, intercept=my - slope * mx)


@dataclass(frozen=True)
class MannKendall:
    """Two-sided Mann-Kendall trend test: S, tie-corrected variance, continuity-corrected Z, p-value."""

    s: int
    var_s: float
    z: float
    p: float
    trend: str  # increasing | decreasing | no trend (at alpha = 0.05)


def normal_cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def mann_kendall(ys: Sequence[float], alpha: float = 0.05) -> MannKendall:
    """The original Mann-Kendall test (the `pymannkendall.original_test` convention).

    S = sum over i < j of sign(y_j - y_i); Var(S) = [n(n-1)(2n+5) - sum_g t_g(t_g-1)(2t_g+5)] / 18 over groups
    of tied values; Z = (S - 1)/sqrt(Var) if S > 0, (S + 1)/sqrt(Var) if S < 0, else 0; p = 2(1 - Phi(|Z|)).
    TempoMed-Bench reports this test's p-value for accuracy by year (paper section 4.1); its code is not
    public, so the convention is the standard one, as docs/metrics.md says.
    """
    n = len(ys)
    s = sum((ys[j] > ys[i]) - (ys[j] < ys[i]) for i in range(n) for j in range(i + 1, n))
    ties = Counter(ys).values()
    var_s = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in ties)) / 18
    z = 0.0
    if var_s > 0 and s != 0:
        z = (s - (1 if s > 0 else -1)) / math.sqrt(var_s)
    p = 2 * (1 - normal_cdf(abs(z)))
    trend = "no trend" if p >= alpha else ("increasing" if z > 0 else "decreasing")
    return MannKendall(s=s, var_s=var_s, z=z, p=p, trend=trend)


def bootstrap_ci(values: Sequence[float], statistic: Callable[[Sequence[float]], float] | None = None,
                 iterations: int = 2000, seed: int = 0, level: float = 0.95,
                 clusters: Sequence[Hashable] | None = None) -> tuple[float, float]:
    """Percentile bootstrap interval of `statistic` (default: the mean) over `values`.

    With `clusters` (e.g. the source MCQ of each perturbed item) whole clusters are resampled, so the
    three perturbations of one question do not count as three independent draws.
    """
    if not values:
        return 0.0, 0.0
    stat = statistic or (lambda xs: sum(xs) / len(xs))
    rng = random.Random(seed)
    if clusters is None:
        groups: list[list[float]] = [[v] for v in values]
    else:
        by: dict[Hashable, list[float]] = {}
        for c, v in zip(clusters, values, strict=True):
            by.setdefault(c, []).append(v)
        groups = list(by.values())
    k = len(groups)
    draws = []
    for _ in range(iterations):
        sample = [v for _ in range(k) for v in groups[rng.randrange(k)]]
        draws.append(stat(sample))
    draws.sort()
    lo = draws[int((1 - level) / 2 * iterations)]
    hi = draws[min(iterations - 1, int((1 + level) / 2 * iterations))]
    return lo, hi


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
    """McNemar's exact test (binomial on the discordant pairs) and a paired bootstrap of the difference."""
    if len(a) != len(b):
        raise ValueError("paired runs must score the same questions")
    n = len(a)
    a_only = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    d = a_only + b_only
    k = min(a_only, b_only)
    tail = sum(math.comb(d, i) for i in range(k + 1)) / 2**d if d else 1.0
    p = min(1.0, 2 * tail)
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    lo, hi = bootstrap_ci(diffs, iterations=iterations, seed=seed)
    return Paired(n=n, a_only=a_only, b_only=b_only, difference=sum(diffs) / n if n else 0.0, p_mcnemar=p,
                  ci=(lo, hi))


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa between two raters' labels (1 for perfect agreement, 0 for chance); 1.0 if both are constant
    and equal, 0.0 if expected agreement is 1 but they differ."""
    if len(a) != len(b) or not a:
        raise ValueError("kappa needs two label lists of the same, non-zero length")
    n = len(a)
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb.get(k, 0) for k in ca) / (n * n)
    if expected == 1:
        return 1.0 if observed == 1 else 0.0
    return (observed - expected) / (1 - expected)
